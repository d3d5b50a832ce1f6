// Command allocation measures the NetworkClaim registry on the all-in-one
// binary with its defaults, with -present claims already in it: a
// delegable 10.0.0.0/8 (the pool), -pooled-share of the claims /24s taken
// from it first fit, the others exact IPv6 prefixes, a tenth of which wait
// on a conflict. It reports, beside the goals it is held to (it never fails
// on them):
//   - create-to-Allocated, one claim at a time: from sending a create to a
//     watch delivering the claim's status with its record Allocated, for an
//     exact prefix and for a /24 from the pool, whose first fit lies past
//     every /24 already taken;
//   - release-to-promotion: from deleting a holder to a watch showing the
//     claim that waited for its range Allocated;
//   - after restarts on the filled data dir, the time from the exec of the
//     binary to ready, to the allocator's ledger rebuilt from status (the
//     time of its log line "Rebuilt the ledger from status", at -v=2), and
//     to a claim created right after ready being Allocated;
//   - memory per claim: the process's live heap and RSS with no claims and
//     with them, and with and without the allocator.
//
// One operation at a time, so the latencies are the registry's, not a
// queue's. The registry is filled by parallel creates over several
// connections; an allocator that does not allocate pool records (KANA v1)
// is detected, and then only exact prefixes are measured.
//
//	go run ./hack/bench/allocation -binary bin/sample-generic-controlplane
//
// With -reuse DIR, DIR being what an earlier run kept (-keep), it only
// measures -restarts restarts on that data dir, which takes seconds rather
// than the minutes of a fill: copy DIR first to measure each change on the
// same claims.
//
// With -profile DIR it also saves a CPU profile of the first restart (from
// when the server first answers, for -profile-for), and a CPU profile and
// an execution trace of -profile-for from the start of a pass of
// exact-prefix claims made before the measured ones, with the slowest
// samples' offsets into the trace. The tracer stops the world at each of
// its generations (about every second), so the traced pass's latencies
// are not the figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// Goals the figures are printed beside.
const (
	goalP99   = 20 * time.Millisecond
	goalFirst = 3 * time.Second
)

// promotionSamples is how many releases are measured.
const promotionSamples = 100

type options struct {
	binary                   string
	present, samples         int
	pooledShare              float64
	restarts                 int
	workers, connections     int
	poolTimeout, fillTimeout time.Duration
	restartTimeout           time.Duration
	keep                     bool
	profile                  string
	profileFor               time.Duration
	stages                   bool
	// reuse is a directory an earlier run kept (-keep): only restarts
	// are measured on its data dir.
	reuse string
	// port is the control plane's secure port.
	port int
}

// withoutAllocator is --controllers for the same control plane without the
// allocator, whose memory is compared.
const withoutAllocator = "*,-networkclaim-allocation"

func main() {
	var o options
	flag.StringVar(&o.binary, "binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	flag.IntVar(&o.present, "present", 100_000, "claims in the registry before measuring, the pool included")
	flag.Float64Var(&o.pooledShare, "pooled-share", 0.5, "share of the present claims that are /24s taken from the pool")
	flag.IntVar(&o.samples, "samples", 500, "claims of each kind created, one at a time, to measure")
	flag.IntVar(&o.restarts, "restarts", 3, "restarts measured; medians are reported")
	flag.IntVar(&o.workers, "workers", 32, "parallel creates while filling the registry")
	flag.IntVar(&o.connections, "connections", 4, "client connections the creates are spread over")
	flag.DurationVar(&o.poolTimeout, "pool-timeout", 30*time.Second, "how long a first pool record may take to be allocated before the allocator is taken not to allocate from pools")
	flag.DurationVar(&o.fillTimeout, "fill-timeout", time.Hour, "how long the registry may take to decide the present claims")
	flag.DurationVar(&o.restartTimeout, "restart-timeout", 3*time.Minute, "how long after a restart a new claim may take to be allocated; after a restart that took longer, no more are measured")
	flag.BoolVar(&o.keep, "keep", false, "keep the data dir and the control plane's logs, and print where")
	flag.StringVar(&o.profile, "profile", "", "save CPU profiles of the first restart and of the exact-prefix latencies, and an execution trace of the latter, into this directory")
	flag.DurationVar(&o.profileFor, "profile-for", 20*time.Second, "how long each -profile profile and trace runs")
	flag.BoolVar(&o.stages, "stages", false, "also report, from the control plane's /metrics, how many observations of each step of create to Allocated took over 10 and 20 ms during each latency measurement")
	flag.StringVar(&o.reuse, "reuse", "", "a directory an earlier run kept with -keep: measure only -restarts restarts on its data dir, without filling, measuring latencies or memory (each restart adds a claim or two)")
	flag.Parse()
	run := run
	if o.reuse != "" {
		run = runReuse
	}
	if err := run(o); err != nil {
		benchutil.Fail(err)
	}
}

// results are the figures run prints.
type results struct {
	layout                    layout
	exact, pooled, promotions []time.Duration
	pooledGiven               [2]string // the first and last measured pool record's prefix
	claims                    int       // after the restarts
	restarts                  []restart
	// stages are the steps' histograms before and after the exact and
	// the pool measurements, with -stages.
	stages [2][2]histograms
	// restartTimedOut: after the last restart a new claim was not
	// allocated within restartTimeout.
	restartTimedOut          bool
	fresh, filled, restarted memory
	withoutAllocator         memory
	ui                       uiFigures
}

func run(o options) error {
	if o.present < 2 || o.samples < 1 || o.restarts < 1 || o.workers < 1 || o.connections < 1 {
		return errors.New("-present must be at least 2, -samples, -restarts, -workers and -connections at least 1")
	}
	if o.samples+o.restarts > tracedOffset {
		return fmt.Errorf("-samples and -restarts add up to at most %d", tracedOffset)
	}
	dir, err := os.MkdirTemp("", "bench-allocation-")
	if err != nil {
		return err
	}
	if o.keep {
		defer fmt.Fprintf(os.Stderr, "data dir and logs kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir) //nolint:errcheck
	}
	args, err := serverArgs(&o, filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	port := o.port
	cp, err := benchutil.Start(o.binary, args, filepath.Join(dir, "controlplane.log"))
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	if err := benchutil.WaitReady(port, cp, time.Minute); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	clients, err := newClients(filepath.Join(dir, "data", "admin.kubeconfig"), "", o.connections)
	if err != nil {
		return err
	}
	claims := clients[0].NetworkingV1alpha1().NetworkClaims()
	admin := clients[0].Discovery().RESTClient()
	ctx := context.Background()
	var r results

	if r.fresh, err = readMemory(ctx, admin); err != nil {
		return err
	}
	pools, err := probePools(ctx, claims, o.poolTimeout)
	if err != nil {
		return err
	}
	r.layout = layout{present: o.present}
	if pools {
		r.layout.pooled = int(o.pooledShare * float64(o.present-1))
		if free := poolCapacity - r.layout.pooled - o.samples - o.restarts; free < 0 {
			return fmt.Errorf("the pool %s holds %d /24s: lower -pooled-share, -present or -samples", poolPrefix, poolCapacity)
		}
	}

	fmt.Fprintf(os.Stderr, "filling the registry with %d claims, %d of them pool records\n", o.present, r.layout.pooled)
	start := time.Now()
	if err := fill(ctx, clients, r.layout, o.workers, o.fillTimeout); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "  created and decided %d claims in %s\n", o.present, time.Since(start).Round(time.Millisecond))
	if r.filled, err = readMemory(ctx, admin); err != nil {
		return err
	}

	traced := 0
	if o.profile != "" {
		fmt.Fprintln(os.Stderr, "profiling and tracing a pass of exact prefixes (not counted in the figures)")
		if err := profileExact(ctx, admin, cp, claims, o); err != nil {
			return err
		}
		traced = o.samples
	}
	fmt.Fprintln(os.Stderr, "measuring")
	if err := r.readStages(ctx, o, admin, 0, 0); err != nil {
		return err
	}
	if r.exact, _, _, err = measure(ctx, claims, o.samples, 0, exactClaim); err != nil {
		return err
	}
	if err := r.readStages(ctx, o, admin, 0, 1); err != nil {
		return err
	}
	if pools {
		if err := r.readStages(ctx, o, admin, 1, 0); err != nil {
			return err
		}
		if r.pooled, _, r.pooledGiven, err = measure(ctx, claims, o.samples, 0, pooledClaim); err != nil {
			return err
		}
		if err := r.readStages(ctx, o, admin, 1, 1); err != nil {
			return err
		}
	}
	if r.promotions, err = measurePromotion(ctx, claims, promotionSamples); err != nil {
		return err
	}
	r.claims = o.present + traced + len(r.exact) + len(r.pooled) + len(r.promotions) // waiters stay
	if r.ui, err = measureUI(ctx, o, filepath.Join(dir, "data", "admin.kubeconfig"), claims); err != nil {
		return err
	}
	r.claims += len(r.ui.live)

	for i := range o.restarts {
		fmt.Fprintf(os.Stderr, "restart %d/%d\n", i+1, o.restarts)
		if err := cp.Stop(); err != nil {
			return err
		}
		profile := ""
		if o.profile != "" && i == 0 {
			profile = filepath.Join(o.profile, "restart-cpu.pb.gz")
		}
		started, m, err := measureRestart(ctx, o, args, filepath.Join(dir, fmt.Sprintf("controlplane-restart-%d.log", i+1)), claims, admin, o.samples+i, pools, profile)
		if started == nil {
			return err
		}
		cp = started // the deferred Stop stops it
		r.claims++
		if pools {
			r.claims++
		}
		if errors.Is(err, errTimeout) {
			fmt.Fprintf(os.Stderr, "  a new claim was not allocated within %s after the restart; no more restarts are measured\n", o.restartTimeout)
			r.restartTimedOut = true
			break
		}
		if err != nil {
			return err
		}
		r.restarts = append(r.restarts, m)
	}
	if r.restarted, err = readMemory(ctx, admin); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "restart with --controllers=%s\n", withoutAllocator)
	if err := cp.Stop(); err != nil {
		return err
	}
	cp, err = benchutil.Start(o.binary, append(slices.Clone(args), "--controllers="+withoutAllocator),
		filepath.Join(dir, "controlplane-without-allocator.log"))
	if err != nil {
		return err
	}
	if err := benchutil.WaitReady(port, cp, time.Minute); err != nil {
		return fmt.Errorf("control plane without the allocator: %w", err)
	}
	if r.withoutAllocator, err = readMemory(ctx, admin); err != nil {
		return err
	}
	if err := cp.Stop(); err != nil {
		return err
	}

	report(o, r)
	return nil
}

// readStages reads the steps' histograms, with -stages, into
// r.stages[measurement][when].
func (r *results) readStages(ctx context.Context, o options, admin rest.Interface, measurement, when int) error {
	if !o.stages {
		return nil
	}
	h, err := readStages(ctx, admin)
	r.stages[measurement][when] = h
	return err
}

// newClients returns n clientsets for the kubeconfig, each with its own
// connection: a dialer of its own keeps client-go from sharing one
// transport, and so one HTTP/2 connection, among them. A host other than
// "" replaces the kubeconfig's.
func newClients(kubeconfig, host string, n int) ([]versioned.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags(host, kubeconfig)
	if err != nil {
		return nil, err
	}
	config.QPS = -1
	out := make([]versioned.Interface, n)
	for i := range out {
		c := rest.CopyConfig(config)
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		if out[i], err = versioned.NewForConfig(c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// probePools creates the pool and a record taken from it, and tells
// whether the allocator allocated the record within timeout. The record is
// deleted again.
func probePools(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, timeout time.Duration) (bool, error) {
	if _, err := createAndWait(ctx, claims, delegableClaim(), time.Minute); err != nil {
		return false, fmt.Errorf("the pool: %w", err)
	}
	probe := poolRecordClaim("probe-pooled")
	_, err := createAndWait(ctx, claims, probe, timeout)
	if delErr := claims.Delete(ctx, probe.Name, metav1.DeleteOptions{}); delErr != nil {
		return false, delErr
	}
	if errors.Is(err, errTimeout) {
		fmt.Fprintf(os.Stderr, "A /%d taken from the pool %s was not allocated within %s: this allocator does not allocate pool records\n"+
			"(from, prefixLength); measuring exact prefixes only. -pool-timeout waits longer.\n", poolLength, poolPrefix, timeout)
		return false, nil
	}
	return err == nil, err
}

// firstAllocations, right after a restart, creates a new exact claim and,
// with pools, a new pool record at once, and returns when a watch saw each
// Allocated, waiting up to timeout.
func firstAllocations(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, i int, pools bool, timeout time.Duration) (exact, pooled time.Time, err error) {
	var wg sync.WaitGroup
	var pooledErr error
	if pools {
		wg.Go(func() { pooled, pooledErr = createAndWait(ctx, claims, pooledClaim(i), timeout) })
	}
	exact, err = createAndWait(ctx, claims, exactClaim(i), timeout)
	wg.Wait()
	return exact, pooled, errors.Join(err, pooledErr)
}

func report(o options, r results) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}

	l := r.layout
	fmt.Printf("\nNetworkClaim registry with %d claims present: the delegable %s (NetworkClaim %s), %d /%ds taken from it\n"+
		"first fit, %d exact IPv6 prefixes (a tenth of them waiting on a conflict); one operation at a time\n\n",
		l.present, poolPrefix, poolClaim, l.pooled, poolLength, l.others()-l.pooled)
	fmt.Printf("%-46s %7s %9s %9s %9s %9s %9s  %s\n", "figure", "samples", "p50", "p90", "p99", "max", "min", "goal")
	row := func(name string, d []time.Duration, goal string) {
		slices.Sort(d)
		q := func(f float64) time.Duration { return d[min(len(d)-1, int(f*float64(len(d))))] }
		fmt.Printf("%-46s %7d %9s %9s %9s %9s %9s  %s\n", name, len(d), ms(q(0.50)), ms(q(0.90)), ms(q(0.99)), ms(d[len(d)-1]), ms(d[0]), goal)
	}
	p99goal := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("p99 <= %s: %s", ms(goalP99), met(d[min(len(d)-1, int(0.99*float64(len(d))))] <= goalP99))
	}
	row("create to Allocated, exact prefix", r.exact, p99goal(r.exact))
	if l.pooled > 0 {
		row(fmt.Sprintf("create to Allocated, /%d from the pool", poolLength), r.pooled, p99goal(r.pooled))
		fmt.Printf("%-46s %s to %s\n", "  (first fit gave them, in order)", r.pooledGiven[0], r.pooledGiven[1])
	} else {
		fmt.Printf("%-46s %7s  (this allocator does not allocate pool records)\n", fmt.Sprintf("create to Allocated, /%d from the pool", poolLength), "-")
	}
	row("delete the holder to the waiter Allocated", r.promotions, "")
	reportUI(r.ui, o.present+len(r.exact)+len(r.pooled)+len(r.promotions))

	reportRestarts(o, r)

	if o.stages {
		reportStages("create to Allocated, exact prefix", r.stages[0][0], r.stages[0][1])
		if l.pooled > 0 {
			reportStages(fmt.Sprintf("create to Allocated, /%d from the pool", poolLength), r.stages[1][0], r.stages[1][1])
		}
	}

	fmt.Printf("\nmemory of the whole process (API server and its watch cache, embedded etcd, every controller), read from\n" +
		"/metrics once it idles, right after a GC forced through /debug/pprof/heap?gc=1: live heap = go_memstats_heap_alloc_bytes,\n" +
		"RSS = process_resident_memory_bytes\n\n")
	fmt.Printf("  %-80s %10s %10s\n", "", "live heap", "RSS")
	mem := func(name string, m memory) {
		note := ""
		if !m.collected {
			note += "  (no GC forced: profiling is off, the heap includes garbage)"
		}
		if m.busy {
			note += "  (read while still busy after a minute)"
		}
		fmt.Printf("  %-80s %10s %10s%s\n", name, mib(m.live), mib(m.rss), note)
	}
	mem("no claims, fresh start", r.fresh)
	mem(fmt.Sprintf("%d claims, just filled", l.present), r.filled)
	mem(fmt.Sprintf("%d claims, after a restart", r.claims), r.restarted)
	mem(fmt.Sprintf("%d claims, after a restart with --controllers=%s", r.claims, withoutAllocator), r.withoutAllocator)
	fmt.Printf("  %-80s %10s %10s\n", "per claim, whole process (after a restart - no claims)",
		perClaim(r.fresh.live, r.restarted.live, r.claims), perClaim(r.fresh.rss, r.restarted.rss, r.claims))
	fmt.Printf("  %-80s %10s %10s\n", "per claim, the allocator (with it - without it)",
		perClaim(r.withoutAllocator.live, r.restarted.live, r.claims), perClaim(r.withoutAllocator.rss, r.restarted.rss, r.claims))
}

// reportRestarts prints the restarts' figures.
func reportRestarts(o options, r results) {
	s := func(v float64) string { return fmt.Sprintf("%.2f s", v) }
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	seconds := func(d []time.Duration) []float64 {
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = v.Seconds()
		}
		return out
	}
	fmt.Printf("\nafter a restart with %d claims (at %s), seconds from the exec of the binary, median (min-max) of %d restarts;\n"+
		"the goal is a claim created right after ready Allocated within %s\n\n", r.claims, restartVerbosity, len(r.restarts), s(goalFirst.Seconds()))
	of := func(f func(restart) time.Duration) []time.Duration {
		out := make([]time.Duration, 0, len(r.restarts))
		for _, m := range r.restarts {
			out = append(out, f(m))
		}
		return out
	}
	row2 := func(name string, d []time.Duration, goal bool) {
		switch {
		case r.restartTimedOut && len(d) == 0:
			fmt.Printf("  %-58s %26s  goal <= %s: missed\n", name, "> "+o.restartTimeout.String(), s(goalFirst.Seconds()))
		case len(d) == 0:
		case goal:
			fmt.Printf("  %-58s %26s  goal <= %s: %s\n", name, benchutil.Cell(seconds(d), s), s(goalFirst.Seconds()), met(benchutil.Median(seconds(d)) <= goalFirst.Seconds()))
		default:
			fmt.Printf("  %-58s %26s  (part of the %s)\n", name, benchutil.Cell(seconds(d), s), s(goalFirst.Seconds()))
		}
	}
	row2("exec to ready", of(func(m restart) time.Duration { return m.ready }), false)
	row2("exec to the allocator's informer synced (rebuild starts)", of(func(m restart) time.Duration { return m.synced }), false)
	row2("exec to the ledger rebuilt from status", of(func(m restart) time.Duration { return m.rebuilt }), false)
	row2("exec to a new exact claim Allocated", of(func(m restart) time.Duration { return m.exact }), true)
	if r.layout.pooled > 0 {
		row2("exec to a new pool record Allocated", of(func(m restart) time.Duration { return m.pooled }), true)
	}
	if cpu := of(func(m restart) time.Duration { return m.cpu }); len(cpu) > 0 {
		fmt.Printf("  %-58s %26s\n", "CPU time of the control plane until ready", benchutil.Cell(seconds(of(func(m restart) time.Duration { return m.cpuReady })), s))
		fmt.Printf("  %-58s %26s  (the first allocation comes no sooner than this / the idle cores)\n",
			"CPU time of the control plane until both were Allocated", benchutil.Cell(seconds(cpu), s))
	}
	if r.restartTimedOut && len(r.restarts) > 0 {
		fmt.Printf("  (and after restart %d, a new claim was not allocated within %s)\n", len(r.restarts)+1, o.restartTimeout)
	}
}

// serverArgs prepares a run's control plane: the profile directory, if
// asked for, and a free port, kept in o.port; it returns the binary's
// arguments for dataDir.
func serverArgs(o *options, dataDir string) ([]string, error) {
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return nil, err
		}
	}
	port, err := benchutil.FreePort()
	if err != nil {
		return nil, err
	}
	o.port = port
	return []string{"--data-dir=" + dataDir, "--secure-port=" + strconv.Itoa(port)}, nil
}
