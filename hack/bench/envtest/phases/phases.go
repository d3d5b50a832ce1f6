// Package phases is what the envtest comparison (hack/bench/envtest) times,
// done the same way for every test control plane it compares: start to a
// first namespace, CRDs installed until established, a suite of reconciler
// tests, stop; or many servers started at once. Each contender runs in a
// process of its own, so that the peak memory of one is not the other's:
// RunChild is that process's main.
package phases

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// pollInterval is how often a phase looks whether what it waits for
// happened: as often as gomega's Eventually, which suites use.
const pollInterval = 10 * time.Millisecond

// waitTimeout bounds each wait of a phase.
const waitTimeout = 2 * time.Minute

// Server is a running test control plane, as a suite uses it.
type Server interface {
	// Config is an admin client configuration.
	Config() *rest.Config
	// InstallCRDs installs the CRDs of the files in dir and returns once
	// they are established and served, as the test server's own CRD
	// installation does.
	InstallCRDs(ctx context.Context, dir string) error
	// Stop stops the server and removes what it left on disk.
	Stop() error
}

// Contender is one kind of test control plane.
type Contender struct {
	// Name is how the table and the command line call it.
	Name string
	// Start starts a server and returns once its own start returned.
	Start func(ctx context.Context) (Server, error)
	// NamespacesGo tells whether a deleted namespace goes away: a
	// namespace controller runs. The suite then waits until each test's
	// namespace is gone; envtest's never go, so there the delete is sent
	// and not waited for.
	NamespacesGo bool
}

// Result is what a child process measured, in seconds and KiB.
type Result struct {
	Start, CRDs, Suite, Stop float64 `json:",omitempty"`
	// NamespaceWait is the part of Suite the tests spent waiting for their
	// namespaces to go.
	NamespaceWait float64 `json:",omitempty"`
	// AllReady is the time until every one of the servers started at once
	// created a namespace.
	AllReady float64 `json:",omitempty"`
	// OwnPeakKiB is the child's own peak RSS, read as it ends.
	OwnPeakKiB int64
	// DescendantsPeakKiB is the peak RSS of the child's descendant
	// processes (the servers it ran as processes), summed, read just before
	// they were stopped.
	DescendantsPeakKiB int64
}

// RunChild parses args, runs the phases on c and writes the Result as one
// line of JSON to out.
func RunChild(c Contender, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	crds := fs.String("crds", "hack/bench/envtest/testdata/crds", "directory of the CRDs to install")
	tests := fs.Int("tests", 20, "reconciler tests in the suite")
	servers := fs.Int("servers", 1, "servers started at once; more than one measures only their start, to ready, and stop")
	startOnly := fs.Bool("start-only", false, "only start the servers to ready and stop them, as with -servers, e.g. to profile a start")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the start (to ready) to this file")
	traceFile := fs.String("trace", "", "write an execution trace of the start (to ready) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	p := profiles{cpu: *cpuProfile, trace: *traceFile}
	var (
		r   Result
		err error
	)
	if *servers > 1 || *startOnly {
		r, err = parallel(ctx, c, *servers, p)
	} else {
		r, err = sequence(ctx, c, *crds, *tests, p)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	r.OwnPeakKiB = peakKiB(os.Getpid())
	return json.NewEncoder(out).Encode(r)
}

// sequence is one suite's life: start, CRDs, the tests, stop.
func sequence(ctx context.Context, c Contender, crds string, tests int, p profiles) (Result, error) {
	var r Result
	stopProfiles, err := p.start()
	if err != nil {
		return r, err
	}
	start := time.Now()
	s, err := startReady(ctx, c, "bench-ready")
	r.Start = time.Since(start).Seconds()
	if profErr := stopProfiles(); err == nil {
		err = profErr
	}
	if err != nil {
		if s != nil {
			s.Stop() //nolint:errcheck // the error that got us here is the one to report
		}
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			s.Stop() //nolint:errcheck // the error that got us here is the one to report
		}
	}()

	start = time.Now()
	if err := s.InstallCRDs(ctx, crds); err != nil {
		return r, fmt.Errorf("installing the CRDs of %s: %w", crds, err)
	}
	r.CRDs = time.Since(start).Seconds()

	start = time.Now()
	namespaceWait, err := runSuite(ctx, s.Config(), tests, c.NamespacesGo)
	if err != nil {
		return r, err
	}
	r.Suite = time.Since(start).Seconds()
	r.NamespaceWait = namespaceWait.Seconds()

	r.DescendantsPeakKiB = descendantsPeakKiB()
	start = time.Now()
	stopped = true
	if err := s.Stop(); err != nil {
		return r, fmt.Errorf("stopping: %w", err)
	}
	r.Stop = time.Since(start).Seconds()
	return r, nil
}

// parallel starts n servers at once and times until all are ready, then
// stops them.
func parallel(ctx context.Context, c Contender, n int, p profiles) (Result, error) {
	var r Result
	servers := make([]Server, n)
	stopProfiles, err := p.start()
	if err != nil {
		return r, err
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for i := range servers {
		g.Go(func() error {
			s, err := startReady(gctx, c, fmt.Sprintf("bench-ready-%d", i))
			servers[i] = s
			return err
		})
	}
	err = g.Wait()
	r.AllReady = time.Since(start).Seconds()
	if profErr := stopProfiles(); err == nil {
		err = profErr
	}
	r.DescendantsPeakKiB = descendantsPeakKiB()
	start = time.Now()
	var stop errgroup.Group
	for _, s := range servers {
		if s != nil {
			stop.Go(s.Stop)
		}
	}
	if stopErr := stop.Wait(); err == nil && stopErr != nil {
		err = fmt.Errorf("stopping: %w", stopErr)
	}
	r.Stop = time.Since(start).Seconds()
	return r, err
}

// startReady starts a server and creates a namespace named ns: ready is
// when a suite's first write succeeds, whatever the server's own start
// waited for.
func startReady(ctx context.Context, c Contender, ns string) (Server, error) {
	s, err := c.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting: %w", err)
	}
	cs, err := kubernetes.NewForConfig(s.Config())
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	}
	if err != nil {
		s.Stop() //nolint:errcheck // the error that got us here is the one to report
		return nil, fmt.Errorf("creating a first namespace: %w", err)
	}
	return s, nil
}

// Fail ends a child on an error.
func Fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
