//go:build robustness

package robustness

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
)

// Settings of a run, from the environment (make robustness).
var (
	topologies = envList("ROBUSTNESS_TOPOLOGIES", "single,joined,external")
	faultNames = envList("ROBUSTNESS_FAULTS", "kill-leader,kill-follower,pause,partition-member,partition-leader,restart-all,compact,replace-member")
	runs       = envInt("ROBUSTNESS_RUNS", 1)
	// injections is how many times a run applies its fault.
	injections = envInt("ROBUSTNESS_INJECTIONS", 3)
)

const (
	objectClients = 4
	objectWatches = 2
	claimClients  = 2
	// settleTimeout bounds the wait, once the last fault healed and the
	// traffic stopped, for every claim to be decided.
	settleTimeout = time.Minute
)

func envList(name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	return strings.Split(v, ",")
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestRobustness runs every topology × fault (ROBUSTNESS_TOPOLOGIES,
// ROBUSTNESS_FAULTS), ROBUSTNESS_RUNS times each: a fresh topology, the
// traffic, the fault applied and healed ROBUSTNESS_INJECTIONS times, then
// every checker on what the clients saw. A violation fails the run and
// leaves the history, porcupine's view, the servers' logs and the fault
// timeline in a results directory the failure names.
func TestRobustness(t *testing.T) {
	binary := os.Getenv("SGCP_BINARY")
	if binary == "" {
		t.Fatal("SGCP_BINARY names no binary: run make robustness, which builds it")
	}
	results := os.Getenv("ROBUSTNESS_RESULTS")
	if results == "" {
		results = filepath.Join(os.TempDir(), "sgcp-robustness-"+time.Now().Format("20060102T150405"))
	}
	for _, topo := range topologies {
		for _, name := range faultNames {
			f, ok := faultNamed(name)
			if !ok {
				t.Fatalf("ROBUSTNESS_FAULTS: unknown fault %q; known: %s", name, strings.Join(knownFaults(), ", "))
			}
			if topo != "single" && topo != "joined" && topo != "external" {
				t.Fatalf("ROBUSTNESS_TOPOLOGIES: unknown topology %q; known: single, joined, external", topo)
			}
			t.Run(topo+"/"+name, func(t *testing.T) {
				if topo == "single" && f.needsMembers {
					t.Skipf("%s needs several members; single has one", name)
				}
				if topo != "joined" && f.needsJoined {
					t.Skipf("%s needs members that are the servers' own; %s's are not", name, topo)
				}
				for i := range runs {
					dir := filepath.Join(results, topo, name, strconv.Itoa(i))
					runOnce(t, binary, topo, f, dir, uint64(i))
				}
			})
		}
	}
}

func faultNamed(name string) (fault, bool) {
	for _, f := range faults {
		if f.name == name {
			return f, true
		}
	}
	return fault{}, false
}

func knownFaults() []string {
	var names []string
	for _, f := range faults {
		names = append(names, f.name)
	}
	return names
}

// clientsOf keeps a client of each server, for the traffic to pick one
// that runs.
type clientsOf struct {
	t    *topology
	mu   sync.Mutex
	kube map[*server]kubernetes.Interface
	reg  map[*server]versioned.Interface
}

func (c *clientsOf) pick(i int) (kubernetes.Interface, versioned.Interface) {
	rs := apiServers(running(c.t))
	if len(rs) == 0 {
		c.t.mu.Lock()
		rs = apiServers(c.t.servers)
		c.t.mu.Unlock()
	}
	s := rs[i%len(rs)]
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.kube[s]; ok {
		return k, c.reg[s]
	}
	cfg, err := s.config()
	if err != nil {
		panic(err)
	}
	c.kube[s], c.reg[s] = kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
	return c.kube[s], c.reg[s]
}

func runOnce(t *testing.T, binary, topo string, f fault, dir string, seed uint64) {
	ctx := t.Context()
	// The run's own directory: what an earlier run with the same
	// ROBUSTNESS_RESULTS left there would be started on, not afresh.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var top *topology
	var err error
	switch topo {
	case "single":
		top, err = startSingle(ctx, binary, dir)
	case "joined":
		top, err = startJoined(ctx, binary, dir)
	case "external":
		top, err = startExternal(ctx, binary, os.Getenv("SGCP_ETCD"), dir)
	}
	if top != nil {
		defer top.teardown()
	}
	if err != nil {
		t.Fatalf("starting %s: %v (logs in %s)", topo, err, dir)
	}
	clients := &clientsOf{t: top, kube: map[*server]kubernetes.Interface{}, reg: map[*server]versioned.Interface{}}
	kube, reg := clients.pick(0)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "robustness-pool"}, Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{
		{Name: "pool", Prefix: "10.210.0.0/20", Delegable: true, Pool: &networkingv1alpha1.PoolPolicy{}}}}}
	if _, err := reg.NetworkingV1alpha1().NetworkClaims().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimsFrom, err := reg.NetworkingV1alpha1().NetworkClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{start: time.Now()}
	for _, c := range claimsFrom.Items {
		rec.claims = append(rec.claims, ClaimEvent{Type: Added, Claim: c})
	}
	rec.add(Op{Client: -1, Kind: List, Outcome: OK, ListRV: first.ResourceVersion, Call: rec.now(), Return: rec.now()})
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range objectClients {
		c := &objectClient{id: i, pick: func() kubernetes.Interface { k, _ := clients.pick(i); return k }, rec: rec, rand: rand.New(rand.NewPCG(seed, uint64(i))), known: map[string]string{}}
		wg.Go(func() { c.run(trafficCtx) })
	}
	for i := range objectWatches {
		w := &watcher{id: 100 + i, pick: func() kubernetes.Interface { k, _ := clients.pick(i + 1); return k }, rec: rec}
		wg.Go(func() { w.run(trafficCtx, first.ResourceVersion) })
	}
	wg.Go(func() {
		claimWatcher(trafficCtx, func() versioned.Interface { _, r := clients.pick(0); return r }, rec, claimsFrom.ResourceVersion)
	})
	for i := range claimClients {
		r := rand.New(rand.NewPCG(seed, uint64(1000+i)))
		wg.Go(func() {
			claimClient(trafficCtx, i, func() versioned.Interface { _, c := clients.pick(i); return c }, r)
		})
	}

	var timeline []string
	note := func(format string, args ...any) {
		timeline = append(timeline, fmt.Sprintf("%8.3fs ", time.Since(rec.start).Seconds())+fmt.Sprintf(format, args...))
	}
	r := rand.New(rand.NewPCG(seed, 7))
	var readyAfter []time.Duration
	sleep(ctx, 2*time.Second)
	for i := range injections {
		note("inject %s (%d of %d)", f.name, i+1, injections)
		what, healed, healedAt, err := f.inject(ctx, top, r)
		if err != nil {
			stopTraffic()
			wg.Wait()
			writeReport(t, dir, rec, timeline)
			t.Fatalf("%s: %v (results in %s)", f.name, err, dir)
		}
		note("healed: %s", what)
		for _, s := range healed {
			if err := waitReadyz(ctx, s); err != nil {
				stopTraffic()
				wg.Wait()
				writeReport(t, dir, rec, timeline)
				t.Fatalf("%s not ready again after %s: %v (results in %s)", s.name, f.name, err, dir)
			}
		}
		readyAfter = append(readyAfter, time.Since(healedAt))
		note("ready again after %s", time.Since(healedAt).Round(time.Millisecond))
		sleep(ctx, 2*time.Second)
	}
	stopTraffic()
	wg.Wait()
	note("traffic stopped")

	// The final state, read once everything healed.
	kube, reg = clients.pick(0)
	final, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		writeReport(t, dir, rec, timeline)
		t.Fatalf("the final list: %v (results in %s)", err, dir)
	}
	var finalObjects []Object
	for i := range final.Items {
		if final.Items[i].Data["v"] != "" {
			finalObjects = append(finalObjects, objectOf(&final.Items[i]))
		}
	}
	var settleErr error
	settleStart := time.Now()
	wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, settleTimeout, true, func(ctx context.Context) (bool, error) { //nolint:errcheck // settleErr says
		list, err := reg.NetworkingV1alpha1().NetworkClaims().List(ctx, metav1.ListOptions{})
		if err != nil {
			settleErr = err
			return false, nil
		}
		settleErr = CheckRegistrySettled(list.Items)
		return settleErr == nil, nil
	})
	note("registry settled after %s: %v", time.Since(settleStart).Round(time.Millisecond), settleErr)

	var violations []string
	lin, err := CheckLinearizable(rec.ops, 5*time.Minute, dir)
	if err != nil {
		t.Fatal(err)
	}
	linVerdict := "linearizable"
	switch lin.Verdict {
	case porcupine.Illegal:
		violations = append(violations, fmt.Sprintf("linearizability: not linearizable (%s)", lin.Visualization))
	case porcupine.Unknown:
		// Out of time: no verdict either way, said in the summary.
		linVerdict = "linearizability inconclusive (porcupine ran out of time; " + lin.Visualization + ")"
	}
	watchReport, err := CheckWatches(rec.watches, rec.ops)
	if err != nil {
		violations = append(violations, "watches: "+err.Error())
	}
	lists, err := CheckLists(rec.ops, rec.watches)
	if err != nil {
		violations = append(violations, "lists: "+err.Error())
	}
	kept, err := CheckNothingLost(rec.ops, finalObjects)
	if err != nil {
		violations = append(violations, "lost: "+err.Error())
	}
	revisions, err := CheckRegistry(rec.claims)
	if err != nil {
		violations = append(violations, "registry: "+err.Error())
	}
	if settleErr != nil {
		violations = append(violations, "registry not settled within "+settleTimeout.String()+": "+settleErr.Error())
	}

	verdict := linVerdict + ", watches complete, nothing lost, registry consistent"
	if len(violations) > 0 {
		verdict = fmt.Sprintf("%d violations", len(violations))
	}
	slices.Sort(readyAfter)
	t.Logf("%s %s: %d operations, %d unknown, %d lists at a revision checked, %d watch events checked (%d watches, %d ended 410 Gone), %d acknowledged writes kept, %d registry revisions checked, %d injections, ready again %s–%s after heal, verdict: %s",
		top.name, f.name, lin.Operations, lin.Unknowns, lists, watchReport.Events, watchReport.Watches, watchReport.Gone, kept, revisions, injections,
		readyAfter[0].Round(100*time.Millisecond), readyAfter[len(readyAfter)-1].Round(100*time.Millisecond), verdict)
	if len(violations) > 0 {
		timeline = append(timeline, fmt.Sprintf("final state: %v", finalObjects))
		writeReport(t, dir, rec, timeline)
		t.Errorf("%s %s: the history breaks the guarantees (results in %s):\n%s", top.name, f.name, dir, strings.Join(violations, "\n"))
	}
}

// waitReadyz waits until the server answers /readyz.
func waitReadyz(ctx context.Context, s *server) error {
	cfg, err := s.config()
	if err != nil {
		return err
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
}

// writeReport leaves what a person needs to read a failed run in dir: the
// history, the watches, the claims' events and the fault timeline (the
// servers' logs are there already, and porcupine's view when it failed).
func writeReport(t *testing.T, dir string, rec *recorder, timeline []string) {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for name, v := range map[string]any{"history.json": rec.ops, "watches.json": rec.watches, "claims.json": rec.claims} {
		data, err := json.MarshalIndent(v, "", " ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o600)
		}
		if err != nil {
			t.Errorf("writing %s: %v", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "timeline.txt"), []byte(strings.Join(timeline, "\n")+"\n"), 0o600); err != nil {
		t.Errorf("writing the timeline: %v", err)
	}
}
