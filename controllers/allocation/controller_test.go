package allocation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
)

// These tests drive the controller's handlers, restore and status writes by
// hand, in the orders the informer may deliver them, against fake clients.

func testClaim(name string, uid types.UID, generation int64, prefix string, status ...networkingv1alpha1.AddressSpaceStatus) *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Generation: generation, ResourceVersion: fmt.Sprint(generation), CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0))},
		Spec:       networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{Prefix: prefix}}},
		Status:     networkingv1alpha1.NetworkClaimStatus{ObservedGeneration: generation, AddressSpace: status},
	}
}

func allocatedRecord(prefix string) networkingv1alpha1.AddressSpaceStatus {
	return networkingv1alpha1.AddressSpaceStatus{Prefix: prefix, Status: networkingv1alpha1.AllocationAllocated, Date: metav1.NewTime(time.Unix(1_700_000_010, 0))}
}

func unavailableRecord(prefix, holder, holderPrefix string) networkingv1alpha1.AddressSpaceStatus {
	return networkingv1alpha1.AddressSpaceStatus{Prefix: prefix, Status: networkingv1alpha1.AllocationUnavailable, Reason: networkingv1alpha1.ReasonConflict,
		ConflictsWith: &networkingv1alpha1.ClaimedPrefix{Claim: holder, Prefix: holderPrefix},
		Message:       "overlaps " + holderPrefix + " held by NetworkClaim " + holder, Date: metav1.NewTime(time.Unix(1_700_000_020, 0))}
}

type testController struct {
	*Controller
	client  *fake.Clientset
	indexer cache.Indexer
}

// newTestController returns a controller whose informer cache holds the
// claims and whose ledger was restored from them, as Run does.
func newTestController(t *testing.T, claims ...*networkingv1alpha1.NetworkClaim) *testController {
	t.Helper()
	client := fake.NewSimpleClientset()
	informer := newInformerFactory(client).Networking().V1alpha1().NetworkClaims()
	c := NewController(t.Context(), informer, client, kubefake.NewClientset(), "test-replica")
	indexer := informer.Informer().GetIndexer()
	tc := &testController{Controller: c, client: client, indexer: indexer}
	for _, claim := range claims {
		if err := client.Tracker().Add(claim.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		tc.cache(t, claim)
	}
	c.queueChecks(c.restore(t.Context()))
	return tc
}

// cache puts an object in the informer's cache, as the reflector does
// before the handlers are called.
func (tc *testController) cache(t *testing.T, claim *networkingv1alpha1.NetworkClaim) {
	t.Helper()
	if err := tc.indexer.Update(claim); err != nil {
		t.Fatal(err)
	}
}

// stored is the claim as the fake API holds it.
func (tc *testController) stored(t *testing.T, name string) *networkingv1alpha1.NetworkClaim {
	t.Helper()
	claim, err := tc.client.NetworkingV1alpha1().NetworkClaims().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return claim
}

func (tc *testController) decision(t *testing.T, name string, uid types.UID, prefix string) string {
	t.Helper()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	_, records, ok := tc.ledger.records(name, uid)
	if !ok {
		return "unknown"
	}
	for _, d := range records {
		if d.key.String() == prefix {
			if d.allocated {
				return "Allocated"
			}
			return "Unavailable: " + unavailableMessage(d.reason, d.prefix, d.req.length, d.holder, d.detail)
		}
	}
	return "absent"
}

// The decider reads the cache, not the event: a claim deleted and created
// again while its events were queued is decided as the cache has it.
func TestDecisionsFollowTheCache(t *testing.T) {
	current := testClaim("x", "uid-2", 1, "10.0.0.0/16", allocatedRecord("10.0.0.0/16"))
	waiter := testClaim("w", "uid-w", 1, "10.0.0.0/24", unavailableRecord("10.0.0.0/24", "x", "10.0.0.0/16"))
	tc := newTestController(t, current, waiter)

	// Events of x's first incarnation, and of its deletion, come late:
	// the handlers only queued the name.
	tc.decide(t.Context(), "x")
	if got := tc.decision(t, "x", "uid-2", "10.0.0.0/16"); got != "Allocated" {
		t.Errorf("x (uid-2) 10.0.0.0/16: %s, want Allocated", got)
	}
	if got, want := tc.decision(t, "w", "uid-w", "10.0.0.0/24"), "Unavailable: overlaps 10.0.0.0/16 held by NetworkClaim x"; got != want {
		t.Errorf("w 10.0.0.0/24: %s, want %s", got, want)
	}
	// A claim deleted before the decider got to it is no ghost in the
	// ledger.
	tc.decide(t.Context(), "ghost")
	if got := tc.decision(t, "ghost", "uid-g", "10.9.0.0/16"); got != "unknown" {
		t.Errorf("a claim not in the cache was decided: %s", got)
	}
	// Deleted from the cache: released, and the waiter promoted.
	if err := tc.indexer.Delete(current); err != nil {
		t.Fatal(err)
	}
	tc.decide(t.Context(), "x")
	if got := tc.decision(t, "w", "uid-w", "10.0.0.0/24"); got != "Allocated" {
		t.Errorf("after x's deletion, w 10.0.0.0/24 is %s, want Allocated", got)
	}
}

// A promotion is written only once the releasing claim's status no longer
// shows the prefix: stored statuses never overlap.
func TestPromotionIsWrittenAfterTheRelease(t *testing.T) {
	holder := testClaim("x", "uid-x", 1, "10.0.0.0/16", allocatedRecord("10.0.0.0/16"))
	waiter := testClaim("w", "uid-w", 1, "10.0.0.0/24", unavailableRecord("10.0.0.0/24", "x", "10.0.0.0/16"))
	tc := newTestController(t, holder, waiter)

	// x gives 10.0.0.0/16 up; its status still shows it.
	edited := testClaim("x", "uid-x", 2, "10.1.0.0/16", allocatedRecord("10.0.0.0/16"))
	edited.Status.ObservedGeneration = 1
	if err := tc.client.Tracker().Update(networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims"), edited.DeepCopy(), ""); err != nil {
		t.Fatal(err)
	}
	tc.cache(t, edited)
	tc.decide(t.Context(), "x")
	if got := tc.decision(t, "w", "uid-w", "10.0.0.0/24"); got != "Allocated" {
		t.Fatalf("after the release, w 10.0.0.0/24 is %s in the ledger, want Allocated", got)
	}

	if err := tc.writeStatus(t.Context(), "w"); !errors.Is(err, errWaitingForRelease) {
		t.Fatalf("writing w's status while x's still shows 10.0.0.0/16: %v, want %v", err, errWaitingForRelease)
	}
	if got := tc.stored(t, "w").Status.AddressSpace[0].Status; got != networkingv1alpha1.AllocationUnavailable {
		t.Fatalf("w's stored status is %s before x's release is stored", got)
	}

	// x's status is written; its informer event wakes w.
	if err := tc.writeStatus(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	written := tc.stored(t, "x")
	if len(written.Status.AddressSpace) != 1 || written.Status.AddressSpace[0].Prefix != "10.1.0.0/16" {
		t.Fatalf("x's status after its write: %+v", written.Status)
	}
	for tc.statuses.Len() > 0 { // what was queued so far
		name, _ := tc.statuses.Get()
		tc.statuses.Done(name)
	}
	written.ResourceVersion = "3" // the API server's write gives it one; the fake's does not
	tc.cache(t, written)
	tc.decide(t.Context(), "x")
	if !queued(tc.Controller, "w") {
		t.Error("x's stored release did not queue w")
	}
	if err := tc.writeStatus(t.Context(), "w"); err != nil {
		t.Fatal(err)
	}
	if got := tc.stored(t, "w").Status.AddressSpace[0]; got.Status != networkingv1alpha1.AllocationAllocated {
		t.Errorf("w's stored status after x's release: %+v, want Allocated", got)
	}
}

func queued(c *Controller, name string) bool {
	found := false
	for c.statuses.Len() > 0 {
		item, _ := c.statuses.Get()
		c.statuses.Done(item)
		found = found || item == name
	}
	return found
}

// --controllers selects the allocator by its name and by the one it had
// first, so that what users wrote before keeps working.
func TestControllersFlagNamesTheAllocatorEitherWay(t *testing.T) {
	for _, name := range []string{Name, ShortName} {
		o := manager.NewOptions()
		if err := o.AddControllers(Descriptor()); err != nil {
			t.Fatal(err)
		}
		o.Controllers = []string{"*", "-" + name}
		if err := o.Validate(); err != nil {
			t.Errorf("--controllers=*,-%s: %v", name, err)
		}
		if o.Enabled(Name) {
			t.Errorf("--controllers=*,-%s leaves the allocator enabled", name)
		}
	}
}

// drain empties a queue of the controller, handing each name to do.
func drain(q interface {
	Len() int
	Get() (string, bool)
	Done(string)
}, do func(string)) {
	for q.Len() > 0 {
		name, _ := q.Get()
		do(name)
		q.Done(name)
	}
}

// statusWrites counts the status updates the controller sent.
func statusWrites(tc *testController) int {
	n := 0
	for _, a := range tc.client.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// A restart writes the statuses that are behind the ledger, and only
// those; the rest are checked behind the writes, so that a claim decided
// after the restart is written first.
func TestRestartWritesOnlyStatusesBehind(t *testing.T) {
	// A first term decides and writes every status.
	first := newTestController(t,
		testClaim("a", "uid-a", 1, "10.0.0.0/16"),
		testClaim("b", "uid-b", 1, "10.0.0.0/24"),
		testClaim("c", "uid-c", 1, "10.1.0.0/16"),
		testClaim("d", "uid-d", 1, "10.2.0.0/16"))
	for _, q := range []interface {
		Len() int
		Get() (string, bool)
		Done(string)
	}{first.statuses, first.checks, first.statuses} {
		drain(q, func(name string) {
			if err := first.writeStatus(t.Context(), name); err != nil {
				t.Fatal(err)
			}
		})
	}
	var stored []*networkingv1alpha1.NetworkClaim
	for i, name := range []string{"a", "b", "c", "d"} {
		claim := first.stored(t, name)
		claim.ResourceVersion = fmt.Sprint(10 + i) // as the API server's writes gave them
		stored = append(stored, claim)
	}
	if got := stored[1].Status.AddressSpace[0].Status; got != networkingv1alpha1.AllocationUnavailable {
		t.Fatalf("b is %s, want Unavailable behind a", got)
	}
	// While no allocator ran, c's owner edited a description: c's status
	// is behind its spec, though its decision stands. d's status is right.
	stored[2].Spec.AddressSpace[0].Description = "edited"
	stored[2].Generation = 2

	second := newTestController(t, stored...)
	if n := second.statuses.Len(); n != 0 {
		t.Errorf("the rebuild queued %d status writes; every decision stood", n)
	}
	if n := second.checks.Len(); n != len(stored) {
		t.Errorf("the rebuild queued %d status checks, want %d", n, len(stored))
	}
	// The informer delivers every claim it listed: the decider has
	// nothing to do for them.
	for _, claim := range stored {
		second.decide(t.Context(), claim.Name)
	}
	if n := second.statuses.Len(); n != 0 {
		t.Errorf("deciding the claims the rebuild read queued %d status writes", n)
	}
	// A claim created after the restart is written before the checks.
	created := testClaim("e", "uid-e", 1, "10.3.0.0/16")
	if err := second.client.Tracker().Add(created.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	second.cache(t, created)
	second.decide(t.Context(), "e")
	if name, _ := second.statuses.Get(); name != "e" {
		t.Errorf("first status write after the restart: %s, want the new claim e", name)
	} else {
		if err := second.writeStatus(t.Context(), name); err != nil {
			t.Fatal(err)
		}
		second.statuses.Done(name)
	}
	// The checks find c behind, and only c.
	for second.checks.Len() > 0 {
		second.checkNext(t.Context())
	}
	var behind []string
	drain(second.statuses, func(name string) {
		behind = append(behind, name)
		if err := second.writeStatus(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	})
	if len(behind) != 1 || behind[0] != "c" {
		t.Errorf("the checks found %q behind, want [c]", behind)
	}
	if n := statusWrites(second); n != 2 {
		t.Errorf("the restart wrote %d statuses, want 2 (e's and c's)", n)
	}
	if got := second.stored(t, "c"); got.Status.ObservedGeneration != 2 || got.Status.AddressSpace[0].Description != "edited" {
		t.Errorf("c's status after the restart: %+v, want generation 2 and the edited description", got.Status)
	}
}

// The garbage collector gets the allocator's informer of NetworkClaims,
// and no informer of any other resource of the clientset: those would list
// with the allocator's credentials, which do not allow it.
func TestSharedInformersOfferOnlyNetworkClaims(t *testing.T) {
	client := fake.NewSimpleClientset()
	factory := newInformerFactory(client)
	own := factory.Networking().V1alpha1().NetworkClaims().Informer()
	shared := sharedInformers{factory}
	for _, tc := range []struct {
		resource schema.GroupVersionResource
		offered  bool
	}{
		{networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims"), true},
		{schema.GroupVersionResource{Group: "controlplane.x-k8s.io", Version: "v1alpha1", Resource: "servicelocations"}, false},
	} {
		t.Run(tc.resource.Resource, func(t *testing.T) {
			informer, err := shared.ForResource(tc.resource)
			switch {
			case !tc.offered && err == nil:
				t.Errorf("ForResource(%s) offers an informer", tc.resource)
			case tc.offered && err != nil:
				t.Errorf("ForResource(%s): %v", tc.resource, err)
			case tc.offered && informer.Informer().GetIndexer() != own.GetIndexer():
				t.Errorf("ForResource(%s) is not the allocator's informer", tc.resource)
			}
		})
	}
}
