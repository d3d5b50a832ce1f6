// Command load measures writes, lists and watches of sample-generic-controlplane
// beside its anchor: etcd, upstream's generic sample apiserver and
// kube-controller-manager running the generic controllers, separate
// processes built from this module's graph. Each run starts both stacks on
// fresh data dirs, one after the other, so machine noise hits both sides;
// the table shows medians of -runs runs and their ratio.
//
// The figures:
//   - creates: -clients clients (each its own connection, protobuf) create
//     ConfigMaps for -duration; creates per second, the latency of each
//     create and the CPU time per create of all the stack's processes;
//     then the same with -clients workers sharing one client (JSON, one
//     HTTP/2 connection: the shape of one busy controller);
//   - the etcd floor: the same payload written straight into etcd for
//     -duration by -clients goroutines, as the API server writes a create
//     (a transaction that puts the key unless it exists): into a member
//     embedded in this process over its unix socket, as ours is, and into the
//     anchor's etcd process over loopback TCP;
//   - lists: a namespace of -list-objects ConfigMaps, listed whole and in
//     pages of 500, -lists times each; the latency of one whole listing;
//   - watches: -watchers watches of one namespace while one client updates
//     its ConfigMaps -updates times; the latency from the update's request
//     to each watcher's event.
//
// With -profile DIR it instead runs ours once under the create load, with
// contention profiling on, and saves CPU, allocation, mutex and block
// profiles of the load into DIR.
//
//	go run ./hack/bench/load -binary bin/sample-generic-controlplane \
//	    -anchor-apiserver bin/anchor-apiserver -anchor-etcd bin/anchor-etcd -anchor-kcm bin/anchor-kcm
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

type options struct {
	clients     int
	duration    time.Duration
	listObjects int
	lists       int
	watchers    int
	updates     int
}

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	var anchor benchutil.AnchorBinaries
	flag.StringVar(&anchor.APIServer, "anchor-apiserver", "bin/anchor-apiserver", "upstream generic sample apiserver binary")
	flag.StringVar(&anchor.Etcd, "anchor-etcd", "bin/anchor-etcd", "etcd binary")
	flag.StringVar(&anchor.KCM, "anchor-kcm", "bin/anchor-kcm", "kube-controller-manager binary")
	runs := flag.Int("runs", 5, "runs per figure; medians are reported")
	var o options
	flag.IntVar(&o.clients, "clients", 32, "concurrent writers, each with its own connection")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long the writers create")
	flag.IntVar(&o.listObjects, "list-objects", 10000, "ConfigMaps in the listed namespace")
	flag.IntVar(&o.lists, "lists", 20, "listings of each kind per run")
	flag.IntVar(&o.watchers, "watchers", 100, "watches of the updated namespace")
	flag.IntVar(&o.updates, "updates", 1000, "updates the watchers receive")
	profile := flag.String("profile", "", "profile ours under the create load into this directory instead of comparing")
	profileShape := flag.String("profile-shape", ownConnections.String(), "with -profile, the create load's shape: "+ownConnections.String()+" (-clients clients, each its own connection, protobuf) or "+oneClient.String()+" (-clients workers sharing one client: JSON, one HTTP/2 connection)")
	kubeconfig := flag.String("kubeconfig", "", "measure the API figures of this running control plane only, -runs times, instead of comparing")
	pid := flag.Int("pid", 0, "with -kubeconfig, the process whose CPU time per create to report")
	flag.Parse()
	// client-go's throttling and warnings would only add noise to the table.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)

	if *profile != "" {
		shape := ownConnections
		switch *profileShape {
		case ownConnections.String():
		case oneClient.String():
			shape = oneClient
		default:
			benchutil.Fail(fmt.Errorf("-profile-shape %q: write %s or %s", *profileShape, ownConnections, oneClient))
		}
		if err := profileOurs(*binary, *profile, o, shape); err != nil {
			benchutil.Fail(err)
		}
		return
	}

	if *kubeconfig != "" {
		if err := measureRunning(*kubeconfig, *pid, *runs, o); err != nil {
			benchutil.Fail(err)
		}
		return
	}

	var ours, theirs results
	for i := range *runs {
		fmt.Fprintf(os.Stderr, "run %d/%d\n", i+1, *runs)
		if err := measureOurs(*binary, o, &ours); err != nil {
			benchutil.Fail(fmt.Errorf("sample-generic-controlplane: %w", err))
		}
		if err := measureAnchor(anchor, o, &theirs); err != nil {
			benchutil.Fail(fmt.Errorf("anchor: %w", err))
		}
	}
	benchutil.Header(fmt.Sprintf("writes, lists and watches, median of %d runs (min-max)", *runs),
		"sample-generic-cp", "anchor (etcd+sample+kcm)")
	printTable(ours, theirs, o)
	fmt.Println("\nThe etcd floor of sample-generic-cp is a member embedded in the harness, over its unix socket;")
	fmt.Println("the anchor's is its etcd process over loopback TCP.")
}

func printTable(ours, theirs results, o options) {
	benchutil.Row(fmt.Sprintf("ConfigMap creates/s, %d clients, %s", o.clients, o.duration), ours.creates, theirs.creates, perSecond)
	benchutil.Row("  create latency p50 (ms)", ours.createP50, theirs.createP50, millis)
	benchutil.Row("  create latency p99 (ms)", ours.createP99, theirs.createP99, millis)
	if len(ours.createCPU) > 0 { // known when the harness knows the processes
		benchutil.Row("  CPU time per create, all processes (ms)", ours.createCPU, theirs.createCPU, millis2)
	}
	benchutil.Row(fmt.Sprintf("ConfigMap creates/s, 1 client, %d workers", o.clients), ours.shared, theirs.shared, perSecond)
	benchutil.Row("  create latency p50 (ms)", ours.sharedP50, theirs.sharedP50, millis)
	benchutil.Row("  create latency p99 (ms)", ours.sharedP99, theirs.sharedP99, millis)
	if len(ours.sharedCPU) > 0 {
		benchutil.Row("  CPU time per create, all processes (ms)", ours.sharedCPU, theirs.sharedCPU, millis2)
	}
	if len(ours.floor) > 0 { // not measured against a running control plane
		benchutil.Row("etcd floor: create txns/s, same payload", ours.floor, theirs.floor, perSecond)
	}
	benchutil.Row(fmt.Sprintf("LIST %d ConfigMaps p50 (ms)", o.listObjects), ours.listP50, theirs.listP50, millis)
	benchutil.Row(fmt.Sprintf("LIST %d ConfigMaps p99 (ms)", o.listObjects), ours.listP99, theirs.listP99, millis)
	benchutil.Row("  in pages of 500, p50 (ms)", ours.pagedP50, theirs.pagedP50, millis)
	benchutil.Row("  in pages of 500, p99 (ms)", ours.pagedP99, theirs.pagedP99, millis)
	benchutil.Row(fmt.Sprintf("watch delivery p50, %d watchers (ms)", o.watchers), ours.watchP50, theirs.watchP50, millis)
	benchutil.Row(fmt.Sprintf("watch delivery p99, %d watchers (ms)", o.watchers), ours.watchP99, theirs.watchP99, millis)
}

// measureRunning runs the API figures against a running control plane,
// in namespaces of their own that it deletes afterwards.
func measureRunning(kubeconfig string, pid, runs int, o options) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	var pids []int
	if pid != 0 {
		pids = []int{pid}
	}
	var r results
	for i := range runs {
		fmt.Fprintf(os.Stderr, "run %d/%d\n", i+1, runs)
		if err := measureAPI(config, pids, o, &r); err != nil {
			return err
		}
		if err := deleteNamespaces(context.Background(), config); err != nil {
			return err
		}
	}
	benchutil.Header(fmt.Sprintf("writes, lists and watches of %s, median of %d runs (min-max)", config.Host, runs), "measured", "")
	printTable(r, results{}, o)
	return nil
}

type results struct {
	creates, createP50, createP99 []float64
	createCPU                     []float64
	// The same creates from workers sharing one client.
	shared, sharedP50, sharedP99 []float64
	sharedCPU                    []float64
	floor                        []float64
	listP50, listP99             []float64
	pagedP50, pagedP99           []float64
	watchP50, watchP99           []float64
}

func perSecond(v float64) string { return fmt.Sprintf("%.0f", v) }
func millis(v float64) string    { return fmt.Sprintf("%.1f", v) }
func millis2(v float64) string   { return fmt.Sprintf("%.2f", v) }

// measureOurs runs the figures against the binary on a fresh data dir,
// then the etcd floor against a member embedded in this process.
func measureOurs(binary string, o options, r *results) error {
	dir, err := os.MkdirTemp("", "bench-load-sgcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	ours, config, err := startOurs(binary, dir)
	if err != nil {
		return err
	}
	defer ours.Stop() //nolint:errcheck
	if err := measureAPI(config, ours.Pids(), o, r); err != nil {
		return err
	}
	if err := ours.Stop(); err != nil {
		return err
	}
	floor, err := embeddedFloor(filepath.Join(dir, "floor"), o)
	if err != nil {
		return fmt.Errorf("etcd floor: %w", err)
	}
	r.floor = append(r.floor, floor)
	return nil
}

// startOurs starts the binary on a data dir in dir, with extra flags, and
// returns it ready with its admin client configuration.
func startOurs(binary, dir string, args ...string) (*benchutil.Ours, *rest.Config, error) {
	ours, err := benchutil.NewOurs(binary, filepath.Join(dir, "data"), args...)
	if err != nil {
		return nil, nil, err
	}
	if err := ours.Start("0"); err != nil {
		return nil, nil, err
	}
	config, err := ours.Config()
	if err != nil {
		ours.Stop() //nolint:errcheck
		return nil, nil, err
	}
	return ours, config, nil
}

// measureAnchor does the same against the anchor stack, and the etcd floor
// against its etcd process.
func measureAnchor(bins benchutil.AnchorBinaries, o options, r *results) error {
	dir, err := os.MkdirTemp("", "bench-load-anchor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	anchor, err := benchutil.NewAnchor(bins, dir)
	if err != nil {
		return err
	}
	if err := anchor.Start("0"); err != nil {
		return err
	}
	defer anchor.Stop() //nolint:errcheck
	if err := measureAPI(anchor.Config(), anchor.Pids(), o, r); err != nil {
		return err
	}
	if err := anchor.Stop(); err != nil {
		return err
	}
	// The floor on a fresh etcd alone, as ours is measured.
	floorDir := filepath.Join(dir, "floor")
	if err := os.Mkdir(floorDir, 0o700); err != nil {
		return err
	}
	floor, err := processFloor(bins.Etcd, floorDir, o)
	if err != nil {
		return fmt.Errorf("etcd floor: %w", err)
	}
	r.floor = append(r.floor, floor)
	return nil
}

// measureAPI waits for the controllers to run, then runs the create, list
// and watch figures against the stack of processes pids.
func measureAPI(config *rest.Config, pids []int, o options, r *results) error {
	ctx := context.Background()
	if err := waitForControllers(ctx, config); err != nil {
		return err
	}
	for _, shape := range []createShape{ownConnections, oneClient} {
		cpu := benchutil.CPUSeconds(pids)
		w, err := measureCreates(ctx, config, o, shape)
		if err != nil {
			return fmt.Errorf("creates, %s: %w", shape, err)
		}
		cpu = benchutil.CPUSeconds(pids) - cpu
		perSecond, p50, p99, cpuPerCreate := &r.creates, &r.createP50, &r.createP99, &r.createCPU
		if shape == oneClient {
			perSecond, p50, p99, cpuPerCreate = &r.shared, &r.sharedP50, &r.sharedP99, &r.sharedCPU
		}
		*perSecond = append(*perSecond, w.perSecond)
		if len(pids) > 0 {
			*cpuPerCreate = append(*cpuPerCreate, 1000*cpu/float64(len(w.latencies)))
		}
		*p50 = append(*p50, ms(percentile(w.latencies, 50)))
		*p99 = append(*p99, ms(percentile(w.latencies, 99)))
	}

	l, err := measureLists(ctx, config, o)
	if err != nil {
		return fmt.Errorf("lists: %w", err)
	}
	r.listP50 = append(r.listP50, ms(percentile(l.full, 50)))
	r.listP99 = append(r.listP99, ms(percentile(l.full, 99)))
	r.pagedP50 = append(r.pagedP50, ms(percentile(l.paged, 50)))
	r.pagedP99 = append(r.pagedP99, ms(percentile(l.paged, 99)))

	d, err := measureWatches(ctx, config, o)
	if err != nil {
		return fmt.Errorf("watches: %w", err)
	}
	r.watchP50 = append(r.watchP50, ms(percentile(d, 50)))
	r.watchP99 = append(r.watchP99, ms(percentile(d, 99)))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
