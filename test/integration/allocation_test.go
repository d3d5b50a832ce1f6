package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// Every test here uses address space of its own, as the shared server's
// ledger outlives each test.

func networkClaims(cfg *rest.Config) clientv1alpha1.NetworkClaimInterface {
	return versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
}

// createClaims creates the claims and deletes them when the test ends.
func createClaims(t *testing.T, claims clientv1alpha1.NetworkClaimInterface, cs ...*networkingv1alpha1.NetworkClaim) {
	t.Helper()
	for _, c := range cs {
		if _, err := claims.Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create NetworkClaim %s: %v", c.Name, err)
		}
		t.Cleanup(func() {
			if err := claims.Delete(context.Background(), c.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				t.Errorf("delete NetworkClaim %s: %v", c.Name, err)
			}
		})
	}
}

// waitForClaim waits until the claim satisfies cond and returns it.
func waitForClaim(t *testing.T, claims clientv1alpha1.NetworkClaimInterface, name, what string, cond func(*networkingv1alpha1.NetworkClaim) bool) *networkingv1alpha1.NetworkClaim {
	t.Helper()
	var last *networkingv1alpha1.NetworkClaim
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		c, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = c
		return cond(c), nil
	})
	if err != nil {
		t.Fatalf("NetworkClaim %s: waiting until %s: %v; last seen status: %+v", name, what, err, statusOf(last))
	}
	return last
}

func waitDecided(t *testing.T, claims clientv1alpha1.NetworkClaimInterface, name string) *networkingv1alpha1.NetworkClaim {
	t.Helper()
	return waitForClaim(t, claims, name, "decided", networkregistry.Decided)
}

// record returns the claim's status record for key: its prefix, or for a
// record taken from a pool, its name.
func record(t *testing.T, c *networkingv1alpha1.NetworkClaim, key string) networkingv1alpha1.AddressSpaceStatus {
	t.Helper()
	for _, r := range c.Status.AddressSpace {
		if r.Prefix == key || r.Name == key {
			return r
		}
	}
	t.Fatalf("NetworkClaim %s has no status record for %s: %+v", c.Name, key, statusOf(c))
	return networkingv1alpha1.AddressSpaceStatus{}
}

func statusOf(c *networkingv1alpha1.NetworkClaim) any {
	if c == nil {
		return nil
	}
	return c.Status
}

func expectAllocated(t *testing.T, c *networkingv1alpha1.NetworkClaim, prefix string) {
	t.Helper()
	if r := record(t, c, prefix); r.Status != networkingv1alpha1.AllocationAllocated || r.Date.IsZero() || r.Message != "" {
		t.Errorf("NetworkClaim %s, %s: got %+v, want Allocated with a date and no message", c.Name, prefix, r)
	}
}

func expectUnavailable(t *testing.T, c *networkingv1alpha1.NetworkClaim, prefix, heldPrefix, holder string) {
	t.Helper()
	want := fmt.Sprintf("overlaps %s held by NetworkClaim %s", heldPrefix, holder)
	if r := record(t, c, prefix); r.Status != networkingv1alpha1.AllocationUnavailable || r.Message != want {
		t.Errorf("NetworkClaim %s, %s: got %+v, want Unavailable with message %q", c.Name, prefix, r, want)
	}
}

func expectReady(t *testing.T, c *networkingv1alpha1.NetworkClaim, status metav1.ConditionStatus, reason string) {
	t.Helper()
	ready := meta.FindStatusCondition(c.Status.Conditions, networkingv1alpha1.ConditionReady)
	if ready == nil || ready.Status != status || ready.Reason != reason || ready.ObservedGeneration != c.Generation || c.Status.ObservedGeneration != c.Generation {
		t.Errorf("NetworkClaim %s (generation %d): Ready %+v, observedGeneration %d; want %s/%s at generation %d",
			c.Name, c.Generation, ready, c.Status.ObservedGeneration, status, reason, c.Generation)
	}
}

// allocationsOf lists every allocated record, failing on two overlapping
// allocations in different claims, unless one is delegated from the other
// (its status names it in delegatedFrom, directly or down a chain): the
// registry's first promise.
func allocationsOf(t *testing.T, claims []networkingv1alpha1.NetworkClaim) map[string][]netip.Prefix {
	t.Helper()
	type held struct {
		claim  string
		prefix netip.Prefix
	}
	var all []held
	parent := map[held]held{}
	out := map[string][]netip.Prefix{}
	for _, c := range claims {
		for _, r := range c.Status.AddressSpace {
			if r.Status != networkingv1alpha1.AllocationAllocated {
				continue
			}
			h := held{c.Name, netip.MustParsePrefix(r.Prefix)}
			if d := r.DelegatedFrom; d != nil {
				parent[h] = held{d.Claim, netip.MustParsePrefix(d.Prefix)}
			}
			all = append(all, h)
			out[c.Name] = append(out[c.Name], h.prefix)
		}
	}
	descends := func(a, b held) bool {
		for range 130 {
			p, ok := parent[a]
			if !ok {
				return false
			}
			if p == b {
				return true
			}
			a = p
		}
		return false
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.claim != b.claim && a.prefix.Overlaps(b.prefix) && !descends(a, b) && !descends(b, a) {
				t.Errorf("two overlapping allocations: %s in NetworkClaim %s and %s in NetworkClaim %s", a.prefix, a.claim, b.prefix, b.claim)
			}
		}
	}
	return out
}

// eventsFor returns the registry's events about a claim.
func eventsFor(t *testing.T, cfg *rest.Config, name string) []corev1.Event {
	t.Helper()
	list, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "NetworkClaim", "involvedObject.name": name}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func waitForEvent(t *testing.T, cfg *rest.Config, name, reason, messagePart string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		for _, e := range eventsFor(t, cfg, name) {
			if e.Reason == reason && strings.Contains(e.Message, messagePart) && e.Source.Component == allocation.Identity {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event mentioning %q on NetworkClaim %s: %v; events: %+v", reason, messagePart, name, err, eventsFor(t, cfg, name))
	}
}

func TestConflictingRecordIsUnavailableAndPromotedOnRelease(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	createClaims(t, claims, newClaim("conflict-holder", "100.64.0.0/16"))
	holder := waitDecided(t, claims, "conflict-holder")
	expectAllocated(t, holder, "100.64.0.0/16")
	expectReady(t, holder, metav1.ConditionTrue, "Allocated")
	// The registry owns status, and the creator still owns spec.
	managers := map[string]string{}
	for _, m := range holder.ManagedFields {
		managers[m.Manager] = m.Subresource
	}
	if sub, ok := managers[allocation.Identity]; !ok || sub != "status" || len(managers) != 2 {
		t.Errorf("managed fields by manager (subresource): %v; want the creator's and %s's on status", managers, allocation.Identity)
	}

	createClaims(t, claims, newClaim("conflict-waiter", "100.64.1.0/24", "100.65.0.0/16"))
	waiter := waitDecided(t, claims, "conflict-waiter")
	expectUnavailable(t, waiter, "100.64.1.0/24", "100.64.0.0/16", "conflict-holder")
	expectAllocated(t, waiter, "100.65.0.0/16")
	expectReady(t, waiter, metav1.ConditionFalse, networkingv1alpha1.ReasonConflict)
	waitForEvent(t, s.ClientConfig, "conflict-holder", allocation.EventAllocated, "100.64.0.0/16")
	waitForEvent(t, s.ClientConfig, "conflict-waiter", allocation.EventUnavailable, "overlaps 100.64.0.0/16 held by NetworkClaim conflict-holder")

	// Deleting the holder frees the range; the waiting record gets it.
	if err := claims.Delete(t.Context(), "conflict-holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waiter = waitForClaim(t, claims, "conflict-waiter", "promoted", func(c *networkingv1alpha1.NetworkClaim) bool {
		return record(t, c, "100.64.1.0/24").Status == networkingv1alpha1.AllocationAllocated
	})
	expectReady(t, waiter, metav1.ConditionTrue, "Allocated")
	waitForEvent(t, s.ClientConfig, "conflict-holder", allocation.EventReleased, "100.64.0.0/16")
	waitForEvent(t, s.ClientConfig, "conflict-waiter", allocation.EventAllocated, "100.64.1.0/24")
}

// Records waiting for one range are served in the order they started
// waiting, not by claim age or name; those still waiting then name the new
// holder.
func TestWaitingRecordsArePromotedFirstComeFirstServed(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	const contested = "100.66.0.0/24"
	createClaims(t, claims, newClaim("fcfs-holder", "100.66.0.0/16", "100.67.0.0/16"))
	waitDecided(t, claims, "fcfs-holder")
	// The oldest claim starts waiting second, by an edit; the last to wait
	// has the first name. All three may start waiting within one second:
	// the order is etcd's (the resourceVersion at which each was first
	// decided), not their status dates, which have seconds.
	createClaims(t, claims, newClaim("fcfs-old", "100.76.0.0/24"))
	waitDecided(t, claims, "fcfs-old")
	createClaims(t, claims, newClaim("fcfs-c", contested))
	expectUnavailable(t, waitDecided(t, claims, "fcfs-c"), contested, "100.66.0.0/16", "fcfs-holder")
	old, err := claims.Get(t.Context(), "fcfs-old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old.Spec.AddressSpace = append(old.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: contested})
	if _, err := claims.Update(t.Context(), old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectUnavailable(t, waitDecided(t, claims, "fcfs-old"), contested, "100.66.0.0/16", "fcfs-holder")
	createClaims(t, claims, newClaim("fcfs-a", contested))
	expectUnavailable(t, waitDecided(t, claims, "fcfs-a"), contested, "100.66.0.0/16", "fcfs-holder")

	// The holder gives the range up by editing its spec: the first to wait
	// gets it, the others now name it.
	holder, err := claims.Get(t.Context(), "fcfs-holder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder.Spec.AddressSpace = holder.Spec.AddressSpace[1:]
	if _, err := claims.Update(t.Context(), holder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPromotion := func(winner string, others ...string) {
		t.Helper()
		c := waitForClaim(t, claims, winner, "promoted", func(c *networkingv1alpha1.NetworkClaim) bool {
			return record(t, c, contested).Status == networkingv1alpha1.AllocationAllocated
		})
		expectReady(t, c, metav1.ConditionTrue, "Allocated")
		for _, name := range others {
			c := waitForClaim(t, claims, name, "naming the new holder", func(c *networkingv1alpha1.NetworkClaim) bool {
				return strings.Contains(record(t, c, contested).Message, winner)
			})
			expectUnavailable(t, c, contested, contested, winner)
		}
	}
	waitForPromotion("fcfs-c", "fcfs-old", "fcfs-a")
	holder = waitDecided(t, claims, "fcfs-holder")
	if len(holder.Status.AddressSpace) != 1 {
		t.Errorf("the holder's status still lists the released record: %+v", holder.Status)
	}
	waitForEvent(t, s.ClientConfig, "fcfs-holder", allocation.EventReleased, "100.66.0.0/16")

	// The winner is deleted: next comes the one that waited second.
	if err := claims.Delete(t.Context(), "fcfs-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForPromotion("fcfs-old", "fcfs-a")
}

// An allocation stays with its claim: neither a claim created earlier and
// edited later, nor an edit of the holder itself, takes it away.
func TestAllocationIsSticky(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	createClaims(t, claims, newClaim("sticky-older", "100.68.0.0/24"))
	waitDecided(t, claims, "sticky-older")
	createClaims(t, claims, newClaim("sticky-holder", "100.69.0.0/16"))
	holder := waitDecided(t, claims, "sticky-holder")
	expectAllocated(t, holder, "100.69.0.0/16")
	date := record(t, holder, "100.69.0.0/16").Date

	// The older claim asks for a range around the holder's.
	older, err := claims.Get(t.Context(), "sticky-older", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	older.Spec.AddressSpace = append(older.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: "100.68.0.0/14"})
	older.Spec.AddressSpace = older.Spec.AddressSpace[1:] // no overlap within one claim
	if _, err := claims.Update(t.Context(), older, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	older = waitDecided(t, claims, "sticky-older")
	expectUnavailable(t, older, "100.68.0.0/14", "100.69.0.0/16", "sticky-holder")

	// The holder edits its claim: its allocation keeps its date.
	holder, err = claims.Get(t.Context(), "sticky-holder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder.Spec.AddressSpace[0].Description = "now with a description"
	holder.Spec.AddressSpace = append(holder.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Prefix: "100.72.0.0/16"})
	if _, err := claims.Update(t.Context(), holder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder = waitDecided(t, claims, "sticky-holder")
	expectAllocated(t, holder, "100.69.0.0/16")
	expectAllocated(t, holder, "100.72.0.0/16")
	if r := record(t, holder, "100.69.0.0/16"); !r.Date.Equal(&date) || r.Description != "now with a description" {
		t.Errorf("after the holder's edit: %+v; want the date %s kept and the new description", r, date)
	}
}

func TestIPv6Allocation(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	createClaims(t, claims, newClaim("v6-services", "fd00:10:96::/112", "100.73.0.0/16"))
	services := waitDecided(t, claims, "v6-services")
	expectAllocated(t, services, "fd00:10:96::/112")
	// A wider IPv6 range overlaps; an IPv4 range never overlaps IPv6.
	createClaims(t, claims, newClaim("v6-pods", "fd00:10::/32", "fd00:20::/48"))
	pods := waitDecided(t, claims, "v6-pods")
	expectUnavailable(t, pods, "fd00:10::/32", "fd00:10:96::/112", "v6-services")
	expectAllocated(t, pods, "fd00:20::/48")
}

// 50 clients race for one range: exactly one wins, and every other claim
// names the winner.
func TestFiftyClientsRaceForOnePrefix(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	const racers = 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, racers)
	for i := range racers {
		name := fmt.Sprintf("race-%02d", i)
		t.Cleanup(func() { _ = claims.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		wg.Go(func() {
			// A client each, as separate components would have.
			own := networkClaims(rest.CopyConfig(s.ClientConfig))
			<-start
			if _, err := own.Create(t.Context(), newClaim(name, "100.74.0.0/16"), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var winners []string
	decidedClaims := make([]networkingv1alpha1.NetworkClaim, 0, racers)
	for i := range racers {
		c := waitDecided(t, claims, fmt.Sprintf("race-%02d", i))
		decidedClaims = append(decidedClaims, *c)
		if record(t, c, "100.74.0.0/16").Status == networkingv1alpha1.AllocationAllocated {
			winners = append(winners, c.Name)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("winners: %v; want exactly one", winners)
	}
	allocationsOf(t, decidedClaims)
	for _, c := range decidedClaims {
		if c.Name != winners[0] {
			expectUnavailable(t, &c, "100.74.0.0/16", "100.74.0.0/16", winners[0])
		}
	}
}

// The controller stops in the middle of a burst of claims; after the
// restart, what status recorded stands and every claim gets decided, with
// no two overlapping allocations.
func TestRestartInTheMiddleOfABurstKeepsTheLedger(t *testing.T) {
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	claims := networkClaims(first.ClientConfig)
	// The controller runs (it starts once the server is ready).
	if _, err := claims.Create(t.Context(), newClaim("burst-probe", "192.168.0.0/24"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDecided(t, claims, "burst-probe")
	// Nested and equal ranges in six disjoint blocks, so that many claims
	// conflict and many are allocated.
	shapes := []string{"10.%d.0.0/16", "10.%d.0.0/24", "10.%d.1.0/24", "10.%d.0.128/25"}
	prefix := func(j int) string { return fmt.Sprintf(shapes[j%len(shapes)], j/len(shapes)%6) }
	before, recorded := stopInTheMiddleOfABurst(t, first, 60, 6, func(j int) *networkingv1alpha1.NetworkClaim {
		return newClaim(fmt.Sprintf("burst-%02d", j), prefix(j))
	})
	undecided := 0
	for i := range before {
		if !networkregistry.Decided(&before[i]) {
			undecided++
		}
	}
	after, now := decidedAfterRestart(t, first, recorded)
	t.Logf("%d claims before the stop: %d with an allocation recorded, %d undecided; %d claims after the restart", len(before), len(recorded), undecided, len(after))
	// Every record that waits names a claim that holds an overlapping prefix.
	for _, c := range after {
		for _, r := range c.Status.AddressSpace {
			if r.Status != networkingv1alpha1.AllocationUnavailable {
				continue
			}
			var heldPrefix, holder string
			if _, err := fmt.Sscanf(r.Message, "overlaps %s held by NetworkClaim %s", &heldPrefix, &holder); err != nil {
				t.Errorf("NetworkClaim %s, %s: message %q: %v", c.Name, r.Prefix, r.Message, err)
				continue
			}
			if !slices.Contains(now[holder], netip.MustParsePrefix(heldPrefix)) || !netip.MustParsePrefix(heldPrefix).Overlaps(netip.MustParsePrefix(r.Prefix)) {
				t.Errorf("NetworkClaim %s, %s: %q, but %s holds %v", c.Name, r.Prefix, r.Message, holder, now[holder])
			}
		}
	}
}

// The registry's metrics are on /metrics.
func TestAllocationMetrics(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	createClaims(t, claims, newClaim("metrics-a", "100.75.0.0/16"), newClaim("metrics-b", "100.75.0.0/24"))
	waitDecided(t, claims, "metrics-a")
	waitDecided(t, claims, "metrics-b")
	body, err := kubernetes.NewForConfigOrDie(s.ClientConfig).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	for _, want := range []string{
		`networkclaim_records{status="Allocated"}`,
		`networkclaim_records{status="Unavailable"}`,
		`networkclaim_allocation_decision_duration_seconds_bucket{le="0.001"}`,
		`networkclaim_allocation_decision_duration_seconds_count`,
		`networkclaim_conflicts_total`,
		`networkclaim_pool_exhausted_total`,
		`workqueue_depth{name="networkclaim-allocation-statuses"}`,
		`workqueue_depth{name="networkclaim-allocation-decisions"}`,
		`workqueue_retries_total{name="networkclaim-allocation-statuses"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Allocating needs the API: with the gate off, the controller does not run.
func expectNoAllocationController(t *testing.T, cfg *rest.Config) {
	t.Helper()
	// The short name is a prefix of the canonical one: whichever of them
	// names the check, it is caught.
	if report := livez(t, cfg); strings.Contains(report, "controller-"+allocation.ShortName) {
		t.Errorf("/livez lists the allocation controller with KANA off:\n%s", report)
	}
	_, err := networkClaims(cfg).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("listing NetworkClaims with KANA off: %v; want NotFound", err)
	}
}

// Under churn (claims created, edited, deleted and created again, as fast
// as one client goes) no two claims' stored statuses ever show overlapping
// allocations, at any resource version: not even between a release and the
// promotion it allows.
func TestStoredStatusesNeverOverlapUnderChurn(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	claims := networkClaims(s.ClientConfig)
	pool := []string{"100.80.0.0/14", "100.80.0.0/16", "100.81.0.0/16", "100.80.0.0/24", "100.80.1.0/24",
		"100.81.128.0/17", "100.82.0.0/15", "100.83.0.0/24"}
	names := []string{"churn-a", "churn-b", "churn-c", "churn-d", "churn-e", "churn-f"}

	w, err := claims.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	violations := make(chan string, 100)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		stored := map[string][]netip.Prefix{}
		for ev := range w.ResultChan() {
			c, ok := ev.Object.(*networkingv1alpha1.NetworkClaim)
			if !ok || !strings.HasPrefix(c.Name, "churn-") {
				continue
			}
			delete(stored, c.Name)
			if ev.Type != watch.Deleted {
				for _, r := range c.Status.AddressSpace {
					if r.Status == networkingv1alpha1.AllocationAllocated {
						stored[c.Name] = append(stored[c.Name], netip.MustParsePrefix(r.Prefix))
					}
				}
			}
			for _, p := range stored[c.Name] {
				for other, ps := range stored {
					for _, q := range ps {
						if other != c.Name && p.Overlaps(q) {
							select {
							case violations <- fmt.Sprintf("at resourceVersion %s: %s holds %s and %s holds %s", c.ResourceVersion, c.Name, p, other, q):
							default:
							}
						}
					}
				}
			}
		}
	}()

	// A deterministic history: one seed, one client.
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() []networkingv1alpha1.AddressSpaceRecord {
		var chosen []networkingv1alpha1.AddressSpaceRecord
		for range 1 + rng.IntN(2) {
			p := netip.MustParsePrefix(pool[rng.IntN(len(pool))])
			if !slices.ContainsFunc(chosen, func(r networkingv1alpha1.AddressSpaceRecord) bool { return netip.MustParsePrefix(r.Prefix).Overlaps(p) }) {
				chosen = append(chosen, networkingv1alpha1.AddressSpaceRecord{Prefix: p.String()})
			}
		}
		return chosen
	}
	exists := map[string]bool{}
	for _, name := range names {
		t.Cleanup(func() { _ = claims.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	for range 200 {
		name := names[rng.IntN(len(names))]
		var err error
		switch {
		case !exists[name]:
			c := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: pick()}}
			_, err = claims.Create(ctx, c, metav1.CreateOptions{})
			exists[name] = true
		case rng.IntN(3) == 0:
			err = claims.Delete(ctx, name, metav1.DeleteOptions{})
			exists[name] = false
		default:
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"addressSpace": pick()}})
			_, err = claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Everything settles: every remaining claim is decided.
	var final []networkingv1alpha1.NetworkClaim
	for _, name := range names {
		if exists[name] {
			final = append(final, *waitDecided(t, claims, name))
		}
	}
	allocationsOf(t, final)
	w.Stop()
	<-checked
	close(violations)
	for v := range violations {
		t.Error(v)
	}
}
