package networkregistry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
)

// waitTimeout bounds every wait for the informer to deliver a change.
const waitTimeout = 10 * time.Second

var (
	allocatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	servicesRef     = v1alpha1.ResourceReference{Resource: "services"}
	podsRef         = v1alpha1.ResourceReference{Resource: "pods"}
	serviceCIDRsRef = v1alpha1.ResourceReference{Group: "networking.k8s.io", Resource: "servicecidrs"}
)

// rec is a spec record and the registry's decision on it ("" for none yet).
type rec struct {
	name        string
	prefix      string
	ref         *v1alpha1.ResourceReference
	description string
	delegable   bool
	// from and length make a record taken from a pool (length > 0) or a
	// sub-prefix (from with prefix).
	from   *v1alpha1.PrefixSource
	length int32

	status v1alpha1.AllocationStatus
	// chosen is the status prefix of a pool record: the one the registry
	// chose, "" while it waits.
	chosen        string
	reason        string
	message       string
	conflictsWith *v1alpha1.ClaimedPrefix
	delegatedFrom *v1alpha1.ClaimedPrefix
}

// from is a PrefixSource of claim, pinned to pool unless it is "".
func from(claim, pool string) *v1alpha1.PrefixSource {
	return &v1alpha1.PrefixSource{Claim: claim, Prefix: pool}
}

// heldBy is the ClaimedPrefix of claim.
func heldBy(claim, prefix string) *v1alpha1.ClaimedPrefix {
	return &v1alpha1.ClaimedPrefix{Claim: claim, Prefix: prefix}
}

// newClaim returns a claim of generation 1 whose status, when every record
// has a decision, is the registry's decision on that generation.
func newClaim(name string, records ...rec) *v1alpha1.NetworkClaim {
	c := &v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	decided, ready := true, true
	for _, r := range records {
		spec := v1alpha1.AddressSpaceRecord{
			Name: r.name, Prefix: r.prefix, Reference: r.ref.DeepCopy(), Description: r.description,
			Delegable: r.delegable, From: r.from.DeepCopy(),
		}
		status := r.prefix
		if r.length > 0 {
			spec.PrefixLength = &r.length
			status = r.chosen
		}
		c.Spec.AddressSpace = append(c.Spec.AddressSpace, spec)
		if r.status == "" {
			decided = false
			continue
		}
		ready = ready && r.status == v1alpha1.AllocationAllocated
		c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{
			Name: r.name, Prefix: status, Reference: r.ref.DeepCopy(), Description: r.description, Delegable: r.delegable,
			Date: metav1.NewTime(allocatedAt), Status: r.status, Reason: r.reason, Message: r.message,
			ConflictsWith: r.conflictsWith.DeepCopy(), DelegatedFrom: r.delegatedFrom.DeepCopy(),
		})
	}
	if decided {
		setReady(c, ready)
	}
	return c
}

// setReady records the registry's decision on the claim's generation.
func setReady(c *v1alpha1.NetworkClaim, ready bool) {
	c.Status.ObservedGeneration = c.Generation
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Allocated", ObservedGeneration: c.Generation, LastTransitionTime: metav1.NewTime(allocatedAt)}
	if !ready {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonConflict, "some prefixes overlap prefixes held by other claims"
	}
	c.Status.Conditions = []metav1.Condition{cond}
}

// fixture is a registry as the allocation controller leaves it, plus a
// claim whose status is stale.
func fixture() []*v1alpha1.NetworkClaim {
	stale := newClaim("stale", rec{prefix: "192.0.2.0/24", status: v1alpha1.AllocationAllocated})
	// The claim gave 198.51.100.0/24 up; the registry has not caught up.
	stale.Status.AddressSpace = append(stale.Status.AddressSpace, v1alpha1.AddressSpaceStatus{Prefix: "198.51.100.0/24", Status: v1alpha1.AllocationAllocated, Date: metav1.NewTime(allocatedAt)})
	return []*v1alpha1.NetworkClaim{
		newClaim("kube-apiserver",
			rec{prefix: "10.96.0.0/12", ref: &servicesRef, description: "Service ClusterIPs", status: v1alpha1.AllocationAllocated},
			rec{prefix: "fd00:10:96::/112", ref: &servicesRef, status: v1alpha1.AllocationAllocated}),
		newClaim("pods",
			rec{prefix: "10.244.0.0/16", ref: &podsRef, status: v1alpha1.AllocationAllocated},
			rec{prefix: "10.96.0.0/16", ref: &podsRef, status: v1alpha1.AllocationUnavailable, message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"}),
		newClaim("lb",
			rec{prefix: "192.168.0.0/24", ref: &serviceCIDRsRef, status: v1alpha1.AllocationAllocated},
			rec{prefix: "172.16.0.0/12", ref: &servicesRef}), // not decided yet
		stale,
	}
}

// startRegistry starts a Registry on a fake clientset and adds claims
// through the API, so that the registry sees them as watch events. (The
// simple fake: the field-managed one needs the apply configurations' schema
// to know NetworkClaim, and it does not.)
func startRegistry(t *testing.T, claims ...*v1alpha1.NetworkClaim) (*Registry, *fake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset()
	r := New(client, "networkregistry-test")
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range claims {
		write(t, r, client, c)
	}
	return r, client
}

// write creates or updates c, spec and status, and waits until the
// registry has seen it.
func write(t *testing.T, r *Registry, client *fake.Clientset, c *v1alpha1.NetworkClaim) {
	t.Helper()
	claims := client.NetworkingV1alpha1().NetworkClaims()
	_, err := claims.Create(t.Context(), c, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = claims.Update(t.Context(), c, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("writing NetworkClaim %s: %v", c.Name, err)
	}
	waitUntil(t, r, "NetworkClaim "+c.Name+" seen", func() bool {
		seen := r.claims[c.Name]
		return seen != nil && seen.Generation == c.Generation &&
			equality.Semantic.DeepEqual(seen.Spec, c.Spec) && equality.Semantic.DeepEqual(seen.Status, c.Status)
	})
}

func waitUntil(t *testing.T, r *Registry, what string, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := r.waitFor(ctx, done); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// held renders allocations as "prefix claim" for comparisons.
func held(allocations []Allocation) []string {
	var out []string
	for _, a := range allocations {
		out = append(out, a.Prefix.String()+" "+a.Claim)
	}
	return out
}

func TestWhoHas(t *testing.T) {
	r, _ := startRegistry(t, fixture()...)
	tests := []struct {
		query   string
		want    []string
		wantErr bool
	}{
		{query: "10.96.0.1", want: []string{"10.96.0.0/12 kube-apiserver"}},
		// Inside an allocation: the holder of the enclosing range.
		{query: "10.96.0.0/16", want: []string{"10.96.0.0/12 kube-apiserver"}},
		// Around allocations: every one inside, in prefix order.
		{query: "10.0.0.0/8", want: []string{"10.96.0.0/12 kube-apiserver", "10.244.0.0/16 pods"}},
		{query: "0.0.0.0/0", want: []string{"10.96.0.0/12 kube-apiserver", "10.244.0.0/16 pods", "192.0.2.0/24 stale", "192.168.0.0/24 lb"}},
		// Host bits are masked away.
		{query: "10.96.0.1/12", want: []string{"10.96.0.0/12 kube-apiserver"}},
		{query: "fd00:10:96::1", want: []string{"fd00:10:96::/112 kube-apiserver"}},
		{query: "fd00::/8", want: []string{"fd00:10:96::/112 kube-apiserver"}},
		{query: "::ffff:10.96.0.1", want: []string{"10.96.0.0/12 kube-apiserver"}},
		{query: "fe80::1%eth0", want: nil},
		{query: "10.244.3.4", want: []string{"10.244.0.0/16 pods"}},
		// Not yet decided, released, and never claimed.
		{query: "172.16.0.1", want: nil},
		{query: "198.51.100.1", want: nil},
		{query: "11.0.0.1", want: nil},
		{query: "10.96.0.300", wantErr: true},
		{query: "10.96.0.0/33", wantErr: true},
		{query: "", wantErr: true},
		{query: "example.com", wantErr: true},
		{query: "fe80::/64%eth0", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			got, err := r.WhoHas(tc.query)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "write an IP address such as 10.96.0.1 or a prefix such as 10.96.0.0/12") || !strings.Contains(err.Error(), `"`+tc.query+`"`) {
					t.Fatalf("WhoHas(%q) = %v, %v; want an error quoting the input and saying what to write", tc.query, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(held(got), tc.want) {
				t.Errorf("WhoHas(%q) = %q, want %q", tc.query, held(got), tc.want)
			}
		})
	}
}

func TestAllocationDetails(t *testing.T) {
	r, _ := startRegistry(t, fixture()...)
	got, err := r.WhoHas("10.96.0.10")
	if err != nil {
		t.Fatal(err)
	}
	want := []Allocation{{Claim: "kube-apiserver", Prefix: netip.MustParsePrefix("10.96.0.0/12"), Reference: &servicesRef, Description: "Service ClusterIPs", Date: allocatedAt}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WhoHas(10.96.0.10) = %+v, want %+v", got, want)
	}
	// Results are copies: changing one changes nothing in the registry.
	got[0].Reference.Resource = "pods"
	if again, _ := r.WhoHas("10.96.0.10"); again[0].Reference.Resource != "services" {
		t.Errorf("changing a result changed the registry: %+v", again[0].Reference)
	}
}

func TestOverlaps(t *testing.T) {
	r, _ := startRegistry(t, fixture()...)
	tests := []struct {
		prefix netip.Prefix
		want   []string
	}{
		{netip.MustParsePrefix("10.96.128.0/17"), []string{"10.96.0.0/12 kube-apiserver"}},
		{netip.MustParsePrefix("10.240.0.0/12"), []string{"10.244.0.0/16 pods"}},
		{netip.MustParsePrefix("192.168.0.128/25"), []string{"192.168.0.0/24 lb"}},
		{netip.MustParsePrefix("fd00:10:96::/64"), []string{"fd00:10:96::/112 kube-apiserver"}},
		{netip.MustParsePrefix("10.128.0.0/16"), nil},
		{netip.Prefix{}, nil},
	}
	for _, tc := range tests {
		if got := held(r.Overlaps(tc.prefix)); !slices.Equal(got, tc.want) {
			t.Errorf("Overlaps(%s) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func TestPrefixes(t *testing.T) {
	r, _ := startRegistry(t, fixture()...)
	tests := []struct {
		ref  v1alpha1.ResourceReference
		want []string
	}{
		// IPv4 first; the undecided 172.16.0.0/12 is not a Service range yet.
		{servicesRef, []string{"10.96.0.0/12", "fd00:10:96::/112"}},
		{podsRef, []string{"10.244.0.0/16"}},
		{serviceCIDRsRef, []string{"192.168.0.0/24"}},
		// The group must match too.
		{v1alpha1.ResourceReference{Group: "example.com", Resource: "services"}, nil},
		{v1alpha1.ResourceReference{Resource: "nodes"}, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, p := range r.Prefixes(tc.ref) {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Prefixes(%+v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

func TestAllocationsAndClaims(t *testing.T) {
	r, _ := startRegistry(t, fixture()...)
	want := []string{"10.96.0.0/12 kube-apiserver", "10.244.0.0/16 pods", "192.0.2.0/24 stale", "192.168.0.0/24 lb", "fd00:10:96::/112 kube-apiserver"}
	if got := held(r.Allocations()); !slices.Equal(got, want) {
		t.Errorf("Allocations() = %q, want %q", got, want)
	}
	var names []string
	for _, c := range r.Claims() {
		names = append(names, c.Name)
	}
	if want := []string{"kube-apiserver", "lb", "pods", "stale"}; !slices.Equal(names, want) {
		t.Errorf("Claims() = %q, want %q", names, want)
	}
}

// Holders of one prefix (a stale status may leave two) come by claim name,
// whatever order the registry saw them in.
func TestAllocationsOfOnePrefix(t *testing.T) {
	r, _ := startRegistry(t,
		newClaim("b", rec{prefix: "10.0.0.0/8", status: v1alpha1.AllocationAllocated}),
		newClaim("c", rec{prefix: "10.0.0.0/8", status: v1alpha1.AllocationAllocated}, rec{prefix: "9.0.0.0/16", status: v1alpha1.AllocationAllocated}),
		newClaim("a", rec{prefix: "10.0.0.0/8", status: v1alpha1.AllocationAllocated}, rec{prefix: "10.0.0.0/16", status: v1alpha1.AllocationAllocated}))
	want := []string{"9.0.0.0/16 c", "10.0.0.0/8 a", "10.0.0.0/8 b", "10.0.0.0/8 c", "10.0.0.0/16 a"}
	if got := held(r.Allocations()); !slices.Equal(got, want) {
		t.Errorf("Allocations() = %q, want %q", got, want)
	}
}

// Updates and deletions replace a claim's allocations: nothing stale stays.
func TestUpdatesAndDeletions(t *testing.T) {
	r, client := startRegistry(t, fixture()...)
	steps := []whoHasStep{
		{
			name: "record removed from spec, status not yet updated",
			change: func(t *testing.T) {
				c := fixture()[0]
				c.Spec.AddressSpace = c.Spec.AddressSpace[:1]
				c.Generation = 2
				write(t, r, client, c)
			},
			query: "fd00:10:96::1",
		},
		{
			name: "unavailable record becomes allocated",
			change: func(t *testing.T) {
				c := fixture()[1]
				c.Status.AddressSpace[1].Status, c.Status.AddressSpace[1].Message = v1alpha1.AllocationAllocated, ""
				write(t, r, client, c)
			},
			query: "10.96.0.1",
			want:  []string{"10.96.0.0/12 kube-apiserver", "10.96.0.0/16 pods"},
		},
		{
			name: "claim deleted",
			change: func(t *testing.T) {
				if err := client.NetworkingV1alpha1().NetworkClaims().Delete(t.Context(), "pods", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, r, "pods deleted", func() bool { return r.claims["pods"] == nil })
			},
			query: "10.0.0.0/8",
			want:  []string{"10.96.0.0/12 kube-apiserver"},
		},
		{
			name: "prefix moves to another claim",
			change: func(t *testing.T) {
				c := newClaim("kube-apiserver", rec{prefix: "10.97.0.0/16", ref: &servicesRef, status: v1alpha1.AllocationAllocated})
				write(t, r, client, c)
				write(t, r, client, newClaim("pods", rec{prefix: "10.96.0.0/16", ref: &podsRef, status: v1alpha1.AllocationAllocated}))
			},
			query: "10.96.0.0/12",
			want:  []string{"10.96.0.0/16 pods", "10.97.0.0/16 kube-apiserver"},
		},
	}
	runWhoHasSteps(t, r, steps)
	want := []string{"10.96.0.0/16 pods", "10.97.0.0/16 kube-apiserver", "192.0.2.0/24 stale", "192.168.0.0/24 lb"}
	if got := held(r.Allocations()); !slices.Equal(got, want) {
		t.Errorf("after all steps Allocations() = %q, want %q", got, want)
	}
	if n := r.index.Len(); n != len(want) {
		t.Errorf("the index holds %d entries, want %d", n, len(want))
	}
}

func TestWaitForAllocation(t *testing.T) {
	tests := []struct {
		name string
		// decide is the registry's decision, written after the wait began.
		decide  *v1alpha1.NetworkClaim
		wantErr string
	}{
		{
			name:   "allocated",
			decide: newClaim("svc", rec{prefix: "10.96.0.0/12", ref: &servicesRef, status: v1alpha1.AllocationAllocated}),
		},
		{
			name: "unavailable",
			decide: newClaim("svc",
				rec{prefix: "10.96.0.0/12", ref: &servicesRef, status: v1alpha1.AllocationUnavailable, message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"},
				rec{prefix: "fd00:10:96::/112", ref: &servicesRef, status: v1alpha1.AllocationAllocated},
				rec{prefix: "10.100.0.0/16", status: v1alpha1.AllocationUnavailable, message: "overlaps 10.100.0.0/24 held by NetworkClaim lb"}),
			wantErr: "NetworkClaim svc: 10.96.0.0/12 unavailable: overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver; 10.100.0.0/16 unavailable: overlaps 10.100.0.0/24 held by NetworkClaim lb",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The claim as it was before the decision: generation 2, and
			// a decision on generation 1 that must not count.
			before := tc.decide.DeepCopy()
			before.Status = newClaim("svc", rec{prefix: "10.1.0.0/16", status: v1alpha1.AllocationAllocated}).Status
			before.Generation = 2
			r, client := startRegistry(t, before)

			type result struct {
				claim *v1alpha1.NetworkClaim
				err   error
			}
			done := make(chan result, 1)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			go func() {
				c, err := r.WaitForAllocation(ctx, "svc")
				done <- result{c, err}
			}()
			decided := tc.decide.DeepCopy()
			decided.Generation = 2
			setReady(decided, tc.wantErr == "")
			write(t, r, client, decided)

			res := <-done
			if res.claim == nil || res.claim.Status.ObservedGeneration != 2 {
				t.Fatalf("WaitForAllocation returned %+v, %v; want the decision on generation 2", res.claim, res.err)
			}
			if tc.wantErr == "" {
				if res.err != nil {
					t.Fatalf("WaitForAllocation: %v", res.err)
				}
				return
			}
			var unavailable *UnavailableError
			if !errors.As(res.err, &unavailable) {
				t.Fatalf("WaitForAllocation error %v (%T), want an *UnavailableError", res.err, res.err)
			}
			if got := res.err.Error(); got != tc.wantErr {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.wantErr)
			}
			if unavailable.Claim != "svc" || len(unavailable.Records) != 2 || unavailable.Records[0].Prefix != "10.96.0.0/12" {
				t.Errorf("UnavailableError %+v", unavailable)
			}
		})
	}

	// Without Claim, WaitForAllocation waits for whatever claim of the name
	// exists, and for one to be created when none does.
	notClaimed := []struct {
		name string
		// before are the claims of the name, in order, before the wait.
		before []*v1alpha1.NetworkClaim
		// deleteBefore deletes the last of before once the wait began.
		deleteBefore bool
	}{
		{name: "created later"},
		{name: "undecided, then decided", before: []*v1alpha1.NetworkClaim{newClaim("later", rec{prefix: "10.0.0.0/8"})}},
		{name: "deleted and created again", before: []*v1alpha1.NetworkClaim{newClaim("later", rec{prefix: "10.0.0.0/8"})}, deleteBefore: true},
	}
	for _, tc := range notClaimed {
		t.Run("not claimed: "+tc.name, func(t *testing.T) {
			r, client := startRegistry(t, tc.before...)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			type result struct {
				claim *v1alpha1.NetworkClaim
				err   error
			}
			done := make(chan result, 1)
			go func() {
				c, err := r.WaitForAllocation(ctx, "later")
				done <- result{c, err}
			}()
			if tc.deleteBefore {
				if err := client.NetworkingV1alpha1().NetworkClaims().Delete(ctx, "later", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, r, "later deleted", func() bool { return r.claims["later"] == nil })
			}
			write(t, r, client, newClaim("later", rec{prefix: "10.0.0.0/8", status: v1alpha1.AllocationAllocated}))
			res := <-done
			if res.err != nil || res.claim == nil || res.claim.Status.ObservedGeneration != 1 {
				t.Fatalf("WaitForAllocation of a claim not made by Claim: %+v, %v; want the decision", res.claim, res.err)
			}
		})
	}

	t.Run("context ends first", func(t *testing.T) {
		r, _ := startRegistry(t, newClaim("undecided", rec{prefix: "10.0.0.0/8"}))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := r.WaitForAllocation(ctx, "undecided")
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "NetworkClaim undecided") {
			t.Fatalf("WaitForAllocation on an ended context: %v; want context.Canceled naming the claim", err)
		}
	})

	t.Run("not started", func(t *testing.T) {
		r := New(fake.NewSimpleClientset(), "test")
		if _, err := r.WaitForAllocation(t.Context(), "svc"); err == nil || !strings.Contains(err.Error(), "call Start first") {
			t.Fatalf("WaitForAllocation before Start: %v", err)
		}
	})
}

var networkClaims = v1alpha1.SchemeGroupVersion.WithResource("networkclaims")

// fakeApply makes Claim work on the fake clientset, whose tracker cannot
// apply: it writes the applied spec to the tracker, as a new object (UID
// "<name>-<n>") or as a new generation of the existing one, and then runs
// during, if set, before Claim returns. The tracker is used directly: the
// fake holds its lock while a reactor runs.
func fakeApply(client *fake.Clientset, during func()) {
	created := 0
	client.PrependReactor("patch", "networkclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchActionImpl)
		applied := &v1alpha1.NetworkClaim{}
		if err := json.Unmarshal(patch.GetPatch(), applied); err != nil {
			return true, nil, err
		}
		tracker := client.Tracker()
		claim := applied
		obj, err := tracker.Get(networkClaims, "", patch.Name)
		switch {
		case err == nil:
			claim = obj.(*v1alpha1.NetworkClaim).DeepCopy()
			if !equality.Semantic.DeepEqual(claim.Spec, applied.Spec) {
				claim.Spec = applied.Spec
				claim.Generation++
			}
			err = tracker.Update(networkClaims, claim, "")
		case apierrors.IsNotFound(err):
			created++
			claim.UID = types.UID(fmt.Sprintf("%s-%d", patch.Name, created))
			claim.Generation = 1
			err = tracker.Create(networkClaims, claim, "")
		}
		if err != nil {
			return true, nil, err
		}
		if during != nil {
			during()
		}
		return true, claim.DeepCopy(), nil
	})
}

// decided returns c with every spec record allocated: the registry's
// decision on c's generation.
func decided(c *v1alpha1.NetworkClaim) *v1alpha1.NetworkClaim {
	c = c.DeepCopy()
	c.Status.AddressSpace = nil
	for _, record := range c.Spec.AddressSpace {
		c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{
			Prefix: record.Prefix, Status: v1alpha1.AllocationAllocated, Date: metav1.NewTime(allocatedAt),
		})
	}
	setReady(c, true)
	return c
}

// When the object that Claim wrote is deleted, WaitForAllocation says so at
// once instead of waiting until its context ends.
func TestWaitForAllocationDeleted(t *testing.T) {
	const deletedErr = "NetworkClaim svc was deleted while waiting for its allocation"
	// The steps act on the claim "svc" and wait until the registry saw
	// what they did.
	type env struct {
		t      *testing.T
		r      *Registry
		client *fake.Clientset
	}
	current := func(e env) *v1alpha1.NetworkClaim {
		e.t.Helper()
		obj, err := e.client.Tracker().Get(networkClaims, "", "svc")
		if err != nil {
			e.t.Fatal(err)
		}
		return obj.(*v1alpha1.NetworkClaim)
	}
	seen := func(e env, what string, uid types.UID) {
		e.t.Helper()
		waitUntil(e.t, e.r, what, func() bool {
			c := e.r.claims["svc"]
			return (uid == "" && c == nil) || (c != nil && c.UID == uid && equality.Semantic.DeepEqual(c.Status, current(e).Status))
		})
	}
	decide := func(e env) {
		c := decided(current(e))
		if err := e.client.Tracker().Update(networkClaims, c, ""); err != nil {
			e.t.Fatal(err)
		}
		seen(e, "the decision", c.UID)
	}
	deleteClaim := func(e env) {
		seen(e, "the claim", current(e).UID)
		if err := e.client.Tracker().Delete(networkClaims, "", "svc"); err != nil {
			e.t.Fatal(err)
		}
		seen(e, "the deletion", "")
	}
	recreate := func(e env) {
		c := decided(newClaim("svc", rec{prefix: "10.96.0.0/12"}))
		c.UID = "svc-recreated"
		if err := e.client.Tracker().Create(networkClaims, c, ""); err != nil {
			e.t.Fatal(err)
		}
		seen(e, "the new object", c.UID)
	}
	// Events the informer delivers after a watch gap, given to the
	// handlers directly.
	replacedAfterRelist := func(e env) {
		seen(e, "the claim", current(e).UID)
		c := decided(current(e))
		c.UID = "svc-recreated"
		e.r.update(c)
	}
	tombstone := func(withObject bool) func(env) {
		return func(e env) {
			last := current(e)
			seen(e, "the claim", last.UID)
			d := cache.DeletedFinalStateUnknown{Key: "svc"}
			if withObject {
				d.Obj = last.DeepCopy()
			}
			e.r.delete(d)
		}
	}
	otherObjectDeleted := func(e env) {
		seen(e, "the claim", current(e).UID)
		other := current(e).DeepCopy()
		other.UID = "svc-older"
		e.r.delete(other)
	}

	tests := []struct {
		name string
		// whileClaiming runs after Claim's write, before Claim returns.
		whileClaiming func(env)
		// beforeWait runs after Claim returned, before WaitForAllocation.
		beforeWait func(env)
		// whileWaiting runs once WaitForAllocation was called.
		whileWaiting []func(env)
		wantErr      string
	}{
		{name: "decided", whileWaiting: []func(env){decide}},
		{name: "another object of the name deleted, then decided", whileWaiting: []func(env){otherObjectDeleted, decide}},
		{name: "deleted while waiting", whileWaiting: []func(env){deleteClaim}, wantErr: deletedErr},
		{name: "deleted and created again, decided", whileWaiting: []func(env){deleteClaim, recreate}, wantErr: deletedErr},
		{name: "replaced, seen only as an update after a relist", whileWaiting: []func(env){replacedAfterRelist}, wantErr: deletedErr},
		{name: "deletion seen as a tombstone", whileWaiting: []func(env){tombstone(true)}, wantErr: deletedErr},
		{name: "deletion seen as a tombstone without the object", whileWaiting: []func(env){tombstone(false)}, wantErr: deletedErr},
		{name: "deleted before the wait", beforeWait: deleteClaim, wantErr: deletedErr},
		{name: "deleted before Claim returned", whileClaiming: deleteClaim, wantErr: deletedErr},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, client := startRegistry(t)
			e := env{t: t, r: r, client: client}
			fakeApply(client, func() {
				if tc.whileClaiming != nil {
					tc.whileClaiming(e)
				}
			})
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			if _, err := r.Claim(ctx, "svc", []Record{{Prefix: netip.MustParsePrefix("10.96.0.0/12")}}); err != nil {
				t.Fatal(err)
			}
			if tc.beforeWait != nil {
				tc.beforeWait(e)
			}
			type result struct {
				claim *v1alpha1.NetworkClaim
				err   error
			}
			done := make(chan result, 1)
			go func() {
				c, err := r.WaitForAllocation(ctx, "svc")
				done <- result{c, err}
			}()
			for _, step := range tc.whileWaiting {
				step(e)
			}
			res := <-done
			if tc.wantErr == "" {
				if res.err != nil || res.claim == nil || res.claim.UID != "svc-1" || res.claim.Status.ObservedGeneration != 1 {
					t.Fatalf("WaitForAllocation = %+v, %v; want the decision on svc-1", res.claim, res.err)
				}
				return
			}
			if res.err == nil || res.err.Error() != tc.wantErr || res.claim != nil {
				t.Fatalf("WaitForAllocation = %+v, %v; want error %q", res.claim, res.err, tc.wantErr)
			}
			if errors.Is(res.err, context.DeadlineExceeded) {
				t.Fatalf("WaitForAllocation waited until its context ended: %v", res.err)
			}
		})
	}
}

// Concurrent Claim calls may return out of order; the registry waits for
// the newest generation of the newest object.
func TestRecordApplied(t *testing.T) {
	tests := []struct {
		name   string
		writes []appliedClaim
		want   appliedClaim
	}{
		{
			name:   "generations in order",
			writes: []appliedClaim{{uid: "a", generation: 1}, {uid: "a", generation: 2}},
			want:   appliedClaim{uid: "a", generation: 2},
		},
		{
			name:   "generations out of order",
			writes: []appliedClaim{{uid: "a", generation: 3}, {uid: "a", generation: 2}},
			want:   appliedClaim{uid: "a", generation: 3},
		},
		{
			name:   "a new object replaces an older one",
			writes: []appliedClaim{{uid: "a", generation: 3}, {uid: "b", generation: 1}},
			want:   appliedClaim{uid: "b", generation: 1},
		},
		{
			name:   "a deleted object does not replace a live one",
			writes: []appliedClaim{{uid: "b", generation: 1}, {uid: "a", generation: 3, deleted: true}},
			want:   appliedClaim{uid: "b", generation: 1},
		},
		{
			name:   "a deleted object stays deleted",
			writes: []appliedClaim{{uid: "a", generation: 1, deleted: true}, {uid: "a", generation: 2}},
			want:   appliedClaim{uid: "a", generation: 2, deleted: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(fake.NewSimpleClientset(), "test")
			for _, w := range tc.writes {
				r.recordApplied("svc", w)
			}
			if got := r.applied["svc"]; got != tc.want {
				t.Errorf("after %+v: %+v, want %+v", tc.writes, got, tc.want)
			}
		})
	}
}

// Until Start returned nil, queries answer nothing, not part of the claims.
func TestQueriesBeforeStart(t *testing.T) {
	r := New(fake.NewSimpleClientset(), "test")
	// What the informer delivers while Start lists the claims.
	for _, c := range append(fixture(), pools()...) {
		r.update(c)
	}
	queries := []struct {
		name string
		n    func() int
	}{
		{"WhoHas", func() int { got, _ := r.WhoHas("10.96.0.1"); return len(got) }},
		{"Overlaps", func() int { return len(r.Overlaps(netip.MustParsePrefix("0.0.0.0/0"))) }},
		{"Prefixes", func() int { return len(r.Prefixes(servicesRef)) }},
		{"Allocations", func() int { return len(r.Allocations()) }},
		{"Claims", func() int { return len(r.Claims()) }},
		{"Pools", func() int { return len(r.Pools()) }},
		{"Waiting", func() int { return len(r.Waiting()) }},
		{"NetworkClaim", func() int {
			if r.NetworkClaim("pods") != nil {
				return 1
			}
			return 0
		}},
		{"Pool", func() int {
			if _, ok := r.Pool("org-pods", netip.MustParsePrefix("10.0.0.0/8")); ok {
				return 1
			}
			return 0
		}},
	}
	for _, q := range queries {
		if n := q.n(); n != 0 {
			t.Errorf("%s before Start returned %d results, want none", q.name, n)
		}
	}
	r.synced.Store(true) // what Start does once every claim is indexed
	for _, q := range queries {
		if n := q.n(); n == 0 {
			t.Errorf("%s once started returned nothing", q.name)
		}
	}
}

// recordApplies makes the fake answer an apply with the claim applied, of
// generation 1, and appends each apply to sent: the fake's tracker cannot
// apply, so tests read what was sent.
func recordApplies(client *fake.Clientset, sent *[]clienttesting.PatchActionImpl) {
	client.PrependReactor("patch", "networkclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchActionImpl)
		*sent = append(*sent, patch)
		claim := &v1alpha1.NetworkClaim{}
		if err := json.Unmarshal(patch.GetPatch(), claim); err != nil {
			return true, nil, err
		}
		claim.Generation = 1
		return true, claim, nil
	})
}

func TestClaim(t *testing.T) {
	r, client := startRegistry(t)
	var sent []clienttesting.PatchActionImpl
	recordApplies(client, &sent)
	records := []Record{
		{Prefix: netip.MustParsePrefix("10.96.0.0/12"), Reference: &servicesRef, Description: "Service ClusterIPs"},
		{Prefix: netip.MustParsePrefix("fd00:10:96::/112")},
	}
	got, err := r.Claim(t.Context(), "svc", records)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 {
		t.Fatalf("Claim sent %d patches, want 1", len(sent))
	}
	if opts := sent[0].PatchOptions; sent[0].GetPatchType() != types.ApplyPatchType || opts.FieldManager != "networkregistry-test" || opts.Force == nil || !*opts.Force {
		t.Errorf("Claim sent a %s patch with options %+v; want server-side apply by networkregistry-test with Force", sent[0].GetPatchType(), opts)
	}
	want := &v1alpha1.NetworkClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.x-k8s.io/v1alpha1", Kind: "NetworkClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Generation: 1},
		Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
			// The core group is sent, empty, so that the field is owned.
			{Prefix: "10.96.0.0/12", Reference: &servicesRef, Description: "Service ClusterIPs"},
			{Prefix: "fd00:10:96::/112"},
		}},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Claim applied %s\nwant %+v", sent[0].GetPatch(), want)
	}
	if !strings.Contains(string(sent[0].GetPatch()), `"group":""`) {
		t.Errorf("the applied reference does not set the core group: %s", sent[0].GetPatch())
	}

	// Records taken from others' delegable prefixes, delegable in turn.
	sent = nil
	sixteen, fortyEight := int32(16), int32(48)
	got, err = r.Claim(t.Context(), "cluster-a", []Record{
		{Name: "pods-v4", From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 16, Delegable: true, Reference: &podsRef},
		{Name: "pods-v6", From: &PrefixSource{Claim: "org-pods", Prefix: netip.MustParsePrefix("fd00::/32")}, PrefixLength: 48},
		{Prefix: netip.MustParsePrefix("172.16.0.0/20"), From: &PrefixSource{Claim: "org-services"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
		{Name: "pods-v4", From: &v1alpha1.PrefixSource{Claim: "org-pods"}, PrefixLength: &sixteen, Delegable: true, Reference: &podsRef},
		{Name: "pods-v6", From: &v1alpha1.PrefixSource{Claim: "org-pods", Prefix: "fd00::/32"}, PrefixLength: &fortyEight},
		{Prefix: "172.16.0.0/20", From: &v1alpha1.PrefixSource{Claim: "org-services"}},
	}}
	if len(sent) != 1 || !equality.Semantic.DeepEqual(got.Spec, wantSpec) {
		t.Errorf("Claim applied %s\nwant %+v", sent[0].GetPatch(), wantSpec)
	}
	// Zero values are not sent, so that the field manager does not own
	// them: no prefix for a pool record, no delegable: false.
	if patch := string(sent[0].GetPatch()); strings.Contains(patch, `"prefix":""`) || strings.Contains(patch, `"delegable":false`) || strings.Contains(patch, `"name":""`) {
		t.Errorf("Claim sent zero values: %s", patch)
	}

	errorCases := []struct {
		name     string
		registry *Registry
		// claim is the claim's name; "" for svc.
		claim   string
		records []Record
		wantErr string
	}{
		{name: "no field manager", registry: New(client, ""), records: records, wantErr: "no field manager"},
		{name: "host bits set", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("10.96.0.1/12")}},
			wantErr: `spec.addressSpace[0].prefix: Invalid value: "10.96.0.1/12": must be a canonical prefix (no host bits set, shortest form): write 10.96.0.0/12`},
		{name: "no prefix", registry: r, records: []Record{{Description: "x"}},
			wantErr: "spec.addressSpace[0].prefix: Required value: write a prefix such as 10.96.0.0/12, or prefixLength with from"},
		{name: "pool record without a name", registry: r, records: []Record{{From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 16}},
			wantErr: "spec.addressSpace[0].name: Required value: name a record taken from a pool, e.g. name: pods-v4"},
		{name: "pool record without a length", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "org-pods"}}},
			wantErr: "spec.addressSpace[0].prefixLength: Invalid value: 0: must be 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one"},
		{name: "length without from", registry: r, records: []Record{{Name: "pods", PrefixLength: 16}},
			wantErr: "spec.addressSpace[0].from: Required value: name the claim to take the prefix from, e.g. from: {claim: org-pods}"},
		{name: "prefix and length", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("10.0.0.0/16"), From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 16}},
			wantErr: "spec.addressSpace[0].prefixLength: Invalid value: 16: write either prefix, to claim that prefix, or prefixLength with from"},
		{name: "length does not fit the pool", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "org-pods", Prefix: netip.MustParsePrefix("10.0.0.0/8")}, PrefixLength: 7}},
			wantErr: "spec.addressSpace[0].prefixLength: Invalid value: 7: must fit strictly inside the pool 10.0.0.0/8: write 9 to 32"},
		{name: "length out of range", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 129}},
			wantErr: "spec.addressSpace[0].prefixLength: Invalid value: 129: must be 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one"},
		{name: "length beyond int32", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 1<<32 + 16}},
			wantErr: "spec.addressSpace[0].prefixLength: Invalid value: 2147483647: must be 1 to 32"},
		{name: "sub-prefix outside the pool", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("11.0.0.0/16"), From: &PrefixSource{Claim: "org-pods", Prefix: netip.MustParsePrefix("10.0.0.0/8")}}},
			wantErr: `spec.addressSpace[0].prefix: Invalid value: "11.0.0.0/16": must lie strictly inside from.prefix 10.0.0.0/8`},
		{name: "pool prefix with host bits", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "org-pods", Prefix: netip.MustParsePrefix("10.0.0.1/8")}, PrefixLength: 16}},
			wantErr: `spec.addressSpace[0].from.prefix: Invalid value: "10.0.0.1/8": must be a canonical prefix (no host bits set, shortest form): write 10.0.0.0/8`},
		{name: "from without a claim", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{}, PrefixLength: 16}},
			wantErr: "spec.addressSpace[0].from.claim: Required value: name the NetworkClaim whose delegable prefix this record is taken from"},
		{name: "from the claim itself", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "svc"}, PrefixLength: 16}},
			wantErr: `spec.addressSpace[0].from.claim: Invalid value: "svc": must name another claim`},
		{name: "from not a claim name", registry: r, records: []Record{{Name: "pods", From: &PrefixSource{Claim: "Org Pods"}, PrefixLength: 16}},
			wantErr: `spec.addressSpace[0].from.claim: Invalid value: "Org Pods": `},
		{name: "invalid name", registry: r, records: []Record{{Name: "Pods_V4", Prefix: netip.MustParsePrefix("10.0.0.0/16")}},
			wantErr: `spec.addressSpace[0].name: Invalid value: "Pods_V4": `},
		{name: "duplicate name", registry: r, records: []Record{{Name: "pods", Prefix: netip.MustParsePrefix("10.0.0.0/16")}, {Name: "pods", Prefix: netip.MustParsePrefix("10.1.0.0/16")}},
			wantErr: `spec.addressSpace[1].name: Invalid value: "pods": is also the name of addressSpace[0]: give each record its own name`},
		// What the API server refuses too, beyond what the records' fields
		// say one by one.
		{name: "overlapping records", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("10.0.0.0/8")}, {Prefix: netip.MustParsePrefix("10.96.0.0/12")}},
			wantErr: `spec.addressSpace[1].prefix: Invalid value: "10.96.0.0/12": overlaps 10.0.0.0/8 (addressSpace[0])`},
		{name: "description too long", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Description: strings.Repeat("x", 256)}},
			wantErr: "spec.addressSpace[0].description: Too long: may not be more than 255 bytes"},
		{name: "IPv4-mapped prefix", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("::ffff:10.0.0.0/104")}},
			wantErr: "write the IPv4 prefix, e.g. 10.0.0.0/8"},
		{name: "no records", registry: r, records: nil, wantErr: "spec.addressSpace: Required value: claim at least one prefix"},
		{name: "invalid claim name", registry: r, claim: "Svc", records: records, wantErr: `metadata.name: Invalid value: "Svc": a lowercase RFC 1123 subdomain`},
	}
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			sent = nil
			name := cmp.Or(tc.claim, "svc")
			_, err := tc.registry.Claim(t.Context(), name, tc.records)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "NetworkClaim") || !strings.Contains(err.Error(), name) {
				t.Fatalf("Claim: %v; want an error naming the claim and containing %q", err, tc.wantErr)
			}
			// Refused as the API server refuses: nothing was sent.
			if tc.registry == r && (!apierrors.IsInvalid(err) || len(sent) > 0) {
				t.Errorf("Claim: %v, after %d requests; want an Invalid error and no request", err, len(sent))
			}
		})
	}
}

func TestStart(t *testing.T) {
	r := New(fake.NewSimpleClientset(), "test")
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err == nil {
		t.Error("a second Start succeeded")
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := New(fake.NewSimpleClientset(), "test").Start(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Start on an ended context: %v, want context.Canceled", err)
	}
}

// Start returns at once, saying why, when the server answers the list with
// an error that retrying does not fix; when ctx ends first, its error names
// the last failure too.
func TestStartListErrors(t *testing.T) {
	resource := networkClaims.GroupResource()
	tests := []struct {
		name string
		// listErr is the server's answer to every list.
		listErr error
		// timeout bounds Start; it must return long before it does unless
		// wantTimeout.
		timeout     time.Duration
		wantTimeout bool
		is          func(error) bool
		wantErr     string
	}{
		{
			name:    "API not served",
			listErr: apierrors.NewNotFound(resource, ""),
			timeout: waitTimeout,
			is:      apierrors.IsNotFound,
			wantErr: "the server does not serve the NetworkClaim API (networking.x-k8s.io/v1alpha1): is its KANA feature gate off?",
		},
		{
			name:    "credentials not accepted",
			listErr: apierrors.NewUnauthorized("Unauthorized"),
			timeout: waitTimeout,
			is:      apierrors.IsUnauthorized,
			wantErr: "the server did not accept the client's credentials",
		},
		{
			name:    "forbidden",
			listErr: apierrors.NewForbidden(resource, "", errors.New(`User "robot" cannot list resource "networkclaims"`)),
			timeout: waitTimeout,
			is:      apierrors.IsForbidden,
			wantErr: "grant the client list and watch on networkclaims, e.g. by the view ClusterRole",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			var lists atomic.Int32
			client.PrependReactor("list", "networkclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
				lists.Add(1)
				return true, nil, tc.listErr
			})
			r := New(client, "test")
			ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
			defer cancel()
			err := r.Start(ctx)
			if err == nil || !tc.is(err) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.listErr.Error()) {
				t.Fatalf("Start: %v; want an error wrapping %q and saying %q", err, tc.listErr, tc.wantErr)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Start: %v; waited until ctx ended", err)
			}
			if got := r.Allocations(); got != nil {
				t.Errorf("Allocations after a failed Start = %v, want nothing", got)
			}
			if lists.Load() != 1 {
				t.Errorf("the informer listed %d times before Start returned, want once", lists.Load())
			}
		})
	}
}

// Other errors are retried, as informers do, until ctx ends.
func TestStartRetriesOtherErrors(t *testing.T) {
	client := fake.NewSimpleClientset()
	var lists atomic.Int32
	client.PrependReactor("list", "networkclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	r := New(client, "test")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := r.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start while the server fails: %v; want context.DeadlineExceeded", err)
	}
	if lists.Load() < 2 {
		t.Errorf("the informer listed %d times, want retries", lists.Load())
	}
}

// Snapshot lists once and fails at once, naming what failed.
func TestSnapshot(t *testing.T) {
	client := fake.NewSimpleClientset(newClaim("services", rec{prefix: "10.96.0.0/12", ref: &servicesRef, status: v1alpha1.AllocationAllocated}))
	r, err := Snapshot(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Allocations(); len(got) != 1 || got[0].Claim != "services" {
		t.Errorf("Snapshot's allocations: %+v, want services' 10.96.0.0/12", got)
	}
	if err := r.Start(t.Context()); err == nil {
		t.Error("Start on a snapshot: no error")
	}

	notServed := fake.NewSimpleClientset()
	notServed.PrependReactor("list", "networkclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(v1alpha1.Resource("networkclaims"), "")
	})
	if _, err := Snapshot(t.Context(), notServed); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "KANA feature gate") {
		t.Errorf("Snapshot when the API is not served: %v; want NotFound with the KANA hint", err)
	}
}

func TestDecided(t *testing.T) {
	ready := func(status metav1.ConditionStatus, observed int64) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: status, Reason: "Test", ObservedGeneration: observed}
	}
	tests := []struct {
		name       string
		generation int64
		observed   int64
		conditions []metav1.Condition
		want       bool
	}{
		{name: "allocated", generation: 2, observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 2)}, want: true},
		{name: "unavailable", generation: 2, observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionFalse, 2)}, want: true},
		{name: "condition without a generation", generation: 2, observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 0)}, want: true},
		{name: "not observed yet", generation: 1},
		{name: "older generation observed", generation: 3, observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 2)}},
		{name: "no Ready condition", generation: 1, observed: 1},
		{name: "Ready unknown", generation: 1, observed: 1, conditions: []metav1.Condition{ready(metav1.ConditionUnknown, 1)}},
		{name: "Ready of an older generation", generation: 2, observed: 2, conditions: []metav1.Condition{ready(metav1.ConditionTrue, 1)}},
		{name: "another condition only", generation: 1, observed: 1, conditions: []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue, Reason: "Test", ObservedGeneration: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.NetworkClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "svc", Generation: tc.generation},
				Status:     v1alpha1.NetworkClaimStatus{ObservedGeneration: tc.observed, Conditions: tc.conditions},
			}
			if got := Decided(c); got != tc.want {
				t.Errorf("Decided = %t, want %t", got, tc.want)
			}
			if got := decision(c) != nil; got != tc.want {
				t.Errorf("decision returned a condition: %t, want %t", got, tc.want)
			}
		})
	}
	if Decided(nil) {
		t.Error("Decided(nil) = true")
	}
}

// delegation is a registry with delegable prefixes and records taken from
// them, three levels deep, as the allocation controller leaves it.
func delegation() []*v1alpha1.NetworkClaim {
	return []*v1alpha1.NetworkClaim{
		newClaim("org-pods",
			rec{name: "v4", prefix: "10.0.0.0/8", ref: &podsRef, description: "pod space", delegable: true, status: v1alpha1.AllocationAllocated},
			rec{prefix: "fd00::/32", ref: &podsRef, delegable: true, status: v1alpha1.AllocationAllocated}),
		newClaim("cluster-a",
			rec{name: "pods-v4", from: from("org-pods", ""), length: 16, ref: &podsRef, delegable: true,
				status: v1alpha1.AllocationAllocated, chosen: "10.0.0.0/16", delegatedFrom: heldBy("org-pods", "10.0.0.0/8")},
			rec{name: "pods-v6", from: from("org-pods", "fd00::/32"), length: 48, ref: &podsRef,
				status: v1alpha1.AllocationAllocated, chosen: "fd00::/48", delegatedFrom: heldBy("org-pods", "fd00::/32")},
			rec{name: "services", from: from("org-services", ""), length: 20, ref: &servicesRef,
				status: v1alpha1.AllocationUnavailable, reason: v1alpha1.ReasonPoolNotFound, message: "NetworkClaim org-services holds no allocated delegable prefix that can hold a /20"}),
		// Three levels: node-1 takes a /24 of cluster-a's delegable /16.
		newClaim("node-1",
			rec{name: "pods", from: from("cluster-a", ""), length: 24, ref: &podsRef,
				status: v1alpha1.AllocationAllocated, chosen: "10.0.0.0/24", delegatedFrom: heldBy("cluster-a", "10.0.0.0/16")}),
		// An exact sub-prefix, taken from a claim that is gone: an orphan
		// keeps its prefix and names no parent.
		newClaim("orphan",
			rec{prefix: "10.200.0.0/16", from: from("gone", ""), status: v1alpha1.AllocationAllocated}),
	}
}

// Records taken from pools are allocations at the prefix the registry
// chose, with their names, delegability and the allocation they were taken
// from.
func TestPoolRecordsIndexed(t *testing.T) {
	r, _ := startRegistry(t, delegation()...)
	tests := []struct {
		query string
		want  []string
	}{
		{query: "10.0.0.1", want: []string{"10.0.0.0/8 org-pods", "10.0.0.0/16 cluster-a", "10.0.0.0/24 node-1"}},
		{query: "10.0.1.1", want: []string{"10.0.0.0/8 org-pods", "10.0.0.0/16 cluster-a"}},
		{query: "10.1.0.1", want: []string{"10.0.0.0/8 org-pods"}},
		{query: "10.200.0.1", want: []string{"10.0.0.0/8 org-pods", "10.200.0.0/16 orphan"}},
		{query: "fd00::1", want: []string{"fd00::/32 org-pods", "fd00::/48 cluster-a"}},
		{query: "fd00:0:1::1", want: []string{"fd00::/32 org-pods"}},
	}
	for _, tc := range tests {
		got, err := r.WhoHas(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(held(got), tc.want) {
			t.Errorf("WhoHas(%s) = %q, want %q", tc.query, held(got), tc.want)
		}
	}

	got := r.Overlaps(netip.MustParsePrefix("10.0.0.0/16"))
	want := []Allocation{
		{Claim: "org-pods", Name: "v4", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Reference: &podsRef, Description: "pod space", Delegable: true, Date: allocatedAt},
		{Claim: "cluster-a", Name: "pods-v4", Prefix: netip.MustParsePrefix("10.0.0.0/16"), Reference: &podsRef, Delegable: true, Date: allocatedAt,
			DelegatedFrom: &ClaimedPrefix{Claim: "org-pods", Prefix: netip.MustParsePrefix("10.0.0.0/8")}},
		{Claim: "node-1", Name: "pods", Prefix: netip.MustParsePrefix("10.0.0.0/24"), Reference: &podsRef, Date: allocatedAt,
			DelegatedFrom: &ClaimedPrefix{Claim: "cluster-a", Prefix: netip.MustParsePrefix("10.0.0.0/16")}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Overlaps(10.0.0.0/16) =\n%+v\nwant\n%+v", got, want)
	}
	// Results are copies, DelegatedFrom too.
	got[1].DelegatedFrom.Claim = "changed"
	if again := r.Overlaps(netip.MustParsePrefix("10.0.0.0/16")); again[1].DelegatedFrom.Claim != "org-pods" {
		t.Errorf("changing a result changed the registry: %+v", again[1].DelegatedFrom)
	}
	if got, want := r.Prefixes(podsRef), []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.0.0.0/24"),
		netip.MustParsePrefix("fd00::/32"), netip.MustParsePrefix("fd00::/48"),
	}; !slices.Equal(got, want) {
		t.Errorf("Prefixes(pods) = %v, want %v", got, want)
	}
}

// A pool record's allocation lasts while its record asks the same; the
// registry's new decision replaces it.
func TestPoolRecordChanges(t *testing.T) {
	r, client := startRegistry(t, delegation()...)
	clusterA := func(change func(c *v1alpha1.NetworkClaim)) func(t *testing.T) {
		return func(t *testing.T) {
			c := delegation()[1]
			c.Generation = 2
			change(c)
			write(t, r, client, c)
		}
	}
	steps := []whoHasStep{
		{
			name:   "length changed, not decided yet",
			change: clusterA(func(c *v1alpha1.NetworkClaim) { *c.Spec.AddressSpace[0].PrefixLength = 20 }),
			query:  "10.0.0.1",
			want:   []string{"10.0.0.0/8 org-pods", "10.0.0.0/24 node-1"},
		},
		{
			name: "taken from another claim, not decided yet",
			change: clusterA(func(c *v1alpha1.NetworkClaim) {
				c.Spec.AddressSpace[0].From = from("org-other", "")
			}),
			query: "10.0.0.1",
			want:  []string{"10.0.0.0/8 org-pods", "10.0.0.0/24 node-1"},
		},
		{
			name: "pinned to a pool the prefix is not in, not decided yet",
			change: clusterA(func(c *v1alpha1.NetworkClaim) {
				c.Spec.AddressSpace[1].From = from("org-pods", "fd00:1::/32")
			}),
			query: "fd00::1",
			want:  []string{"fd00::/32 org-pods"},
		},
		{
			name:   "record renamed: a new request",
			change: clusterA(func(c *v1alpha1.NetworkClaim) { c.Spec.AddressSpace[1].Name = "v6" }),
			query:  "fd00::1",
			want:   []string{"fd00::/32 org-pods"},
		},
		{
			name:   "description changed: the same request",
			change: clusterA(func(c *v1alpha1.NetworkClaim) { c.Spec.AddressSpace[0].Description = "pods of cluster a" }),
			query:  "10.0.0.1",
			want:   []string{"10.0.0.0/8 org-pods", "10.0.0.0/16 cluster-a", "10.0.0.0/24 node-1"},
		},
		{
			name: "record removed",
			change: clusterA(func(c *v1alpha1.NetworkClaim) {
				c.Spec.AddressSpace = c.Spec.AddressSpace[1:]
			}),
			query: "10.0.0.1",
			want:  []string{"10.0.0.0/8 org-pods", "10.0.0.0/24 node-1"},
		},
	}
	runWhoHasSteps(t, r, steps)
}

func TestChain(t *testing.T) {
	cycle := []*v1alpha1.NetworkClaim{
		newClaim("a", rec{prefix: "192.0.2.0/24", from: from("b", ""), delegable: true, status: v1alpha1.AllocationAllocated, delegatedFrom: heldBy("b", "192.0.2.0/24")}),
		newClaim("b", rec{prefix: "192.0.2.0/24", from: from("a", ""), delegable: true, status: v1alpha1.AllocationAllocated, delegatedFrom: heldBy("a", "192.0.2.0/24")}),
	}
	r, client := startRegistry(t, append(delegation(), cycle...)...)
	chain := func(query string) []string {
		t.Helper()
		got, err := r.WhoHas(query)
		if err != nil || len(got) == 0 {
			t.Fatalf("WhoHas(%s) = %v, %v", query, got, err)
		}
		return held(r.Chain(got[len(got)-1]))
	}
	tests := []struct {
		name  string
		query string
		want  []string
	}{
		{name: "three levels", query: "10.0.0.1", want: []string{"10.0.0.0/24 node-1", "10.0.0.0/16 cluster-a", "10.0.0.0/8 org-pods"}},
		{name: "two levels", query: "fd00::1", want: []string{"fd00::/48 cluster-a", "fd00::/32 org-pods"}},
		{name: "the root alone", query: "10.1.0.1", want: []string{"10.0.0.0/8 org-pods"}},
		{name: "an orphan alone", query: "10.200.0.1", want: []string{"10.200.0.0/16 orphan"}},
		// Written by hand; the registry never makes one.
		{name: "a cycle ends", query: "192.0.2.1", want: []string{"192.0.2.0/24 b", "192.0.2.0/24 a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := chain(tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("Chain of %s's holder = %q, want %q", tc.query, got, tc.want)
			}
		})
	}

	// The parent released: the chain ends at the child, which says what
	// it was taken from.
	if err := client.NetworkingV1alpha1().NetworkClaims().Delete(t.Context(), "cluster-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, "cluster-a deleted", func() bool { return r.claims["cluster-a"] == nil })
	got, _ := r.WhoHas("10.0.0.1")
	c := r.Chain(got[len(got)-1])
	if len(c) != 1 || c[0].Claim != "node-1" || c[0].DelegatedFrom == nil || c[0].DelegatedFrom.Claim != "cluster-a" {
		t.Errorf("Chain of node-1 once cluster-a is gone = %+v, want node-1 alone, naming cluster-a", c)
	}

	if got := New(fake.NewSimpleClientset(), "test").Chain(Allocation{Claim: "x"}); got != nil {
		t.Errorf("Chain before Start = %v, want nothing", got)
	}
}

func TestWaitForPrefix(t *testing.T) {
	decided := delegation()[1]
	tests := []struct {
		name       string
		record     string
		want       string
		wantErr    string
		wantReason string
	}{
		{name: "chosen from a pool", record: "pods-v4", want: "10.0.0.0/16"},
		{name: "chosen from a pinned pool", record: "pods-v6", want: "fd00::/48"},
		{
			name: "unavailable", record: "services",
			wantErr:    "NetworkClaim cluster-a: services unavailable: NetworkClaim org-services holds no allocated delegable prefix that can hold a /20",
			wantReason: v1alpha1.ReasonPoolNotFound,
		},
		{name: "no such record", record: "pods", wantErr: `NetworkClaim cluster-a has no record named "pods"; its records are named pods-v4, pods-v6, services`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, client := startRegistry(t)
			ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
			defer cancel()
			type result struct {
				prefix netip.Prefix
				err    error
			}
			done := make(chan result, 1)
			go func() {
				p, err := r.WaitForPrefix(ctx, "cluster-a", tc.record)
				done <- result{p, err}
			}()
			write(t, r, client, decided)
			res := <-done
			if tc.wantErr == "" {
				if res.err != nil || res.prefix.String() != tc.want {
					t.Fatalf("WaitForPrefix(cluster-a, %s) = %v, %v; want %s", tc.record, res.prefix, res.err, tc.want)
				}
				return
			}
			if res.err == nil || res.err.Error() != tc.wantErr || res.prefix.IsValid() {
				t.Fatalf("WaitForPrefix(cluster-a, %s) = %v, %v; want error %q", tc.record, res.prefix, res.err, tc.wantErr)
			}
			var unavailable *UnavailableError
			if tc.wantReason != "" && (!errors.As(res.err, &unavailable) || unavailable.Reason != tc.wantReason || len(unavailable.Records) != 1 || unavailable.Records[0].Name != tc.record) {
				t.Errorf("WaitForPrefix error %#v; want an *UnavailableError with reason %s and the record alone", res.err, tc.wantReason)
			}
		})
	}
}

// UnavailableError says why in fields as well as in words.
func TestUnavailableErrorFields(t *testing.T) {
	r, client := startRegistry(t)
	c := newClaim("pods",
		rec{prefix: "10.96.0.0/16", status: v1alpha1.AllocationUnavailable, reason: v1alpha1.ReasonConflict,
			message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver", conflictsWith: heldBy("kube-apiserver", "10.96.0.0/12")},
		rec{prefix: "10.244.0.0/16", status: v1alpha1.AllocationAllocated},
		rec{name: "pool", from: from("org-pods", ""), length: 16, status: v1alpha1.AllocationUnavailable, reason: v1alpha1.ReasonPoolExhausted,
			message: "no free /16 in 10.0.0.0/8 of NetworkClaim org-pods"})
	c.Status.Conditions[0].Reason, c.Status.Conditions[0].Message = v1alpha1.ReasonConflict, "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"
	write(t, r, client, c)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	_, err := r.WaitForAllocation(ctx, "pods")
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("WaitForAllocation: %v, want an *UnavailableError", err)
	}
	if want := "NetworkClaim pods: 10.96.0.0/16 unavailable: overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver; pool unavailable: no free /16 in 10.0.0.0/8 of NetworkClaim org-pods"; err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}
	if unavailable.Reason != v1alpha1.ReasonConflict || unavailable.Message != "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver" {
		t.Errorf("Reason, Message = %q, %q; want the Ready condition's", unavailable.Reason, unavailable.Message)
	}
	var reasons []string
	for _, record := range unavailable.Records {
		reasons = append(reasons, record.Reason)
	}
	if want := []string{v1alpha1.ReasonConflict, v1alpha1.ReasonPoolExhausted}; !slices.Equal(reasons, want) {
		t.Errorf("the records' reasons = %q, want %q", reasons, want)
	}
	if got, want := unavailable.Conflicts(), []ClaimedPrefix{{Claim: "kube-apiserver", Prefix: netip.MustParsePrefix("10.96.0.0/12")}}; !slices.Equal(got, want) {
		t.Errorf("Conflicts() = %+v, want %+v", got, want)
	}
}

// whoHasStep changes the claims, then asks WhoHas(query) and wants its
// answers as held prints them.
type whoHasStep struct {
	name   string
	change func(t *testing.T)
	query  string
	want   []string
}

// runWhoHasSteps runs the steps in order, each a subtest, on one registry.
func runWhoHasSteps(t *testing.T, r *Registry, steps []whoHasStep) {
	t.Helper()
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.change(t)
			got, err := r.WhoHas(step.query)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(held(got), step.want) {
				t.Errorf("WhoHas(%s) = %q, want %q", step.query, held(got), step.want)
			}
		})
	}
}

// Changed is closed by the next change a follower has not seen, so a
// follower that takes it before querying misses nothing.
func TestChanged(t *testing.T) {
	r, client := startRegistry(t, fixture()...)
	changed := r.Changed()
	select {
	case <-changed:
		t.Fatal("Changed() was closed before any change after it was taken")
	default:
	}
	if got := held(r.Overlaps(netip.MustParsePrefix("192.168.0.0/16"))); len(got) != 1 {
		t.Fatalf("Overlaps(192.168.0.0/16) = %q before the change, want one allocation", got)
	}
	if err := client.NetworkingV1alpha1().NetworkClaims().Delete(t.Context(), "lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(waitTimeout):
		t.Fatalf("Changed() taken before a deletion was not closed within %s", waitTimeout)
	}
	if got := held(r.Overlaps(netip.MustParsePrefix("192.168.0.0/16"))); len(got) != 0 {
		t.Errorf("Overlaps(192.168.0.0/16) = %q after the channel closed, want the deletion seen", got)
	}
	select {
	case <-r.Changed():
		t.Error("Changed() taken after the change is already closed")
	default:
	}
}

// Waiting lists the records the registry has not allocated, and follows
// the claims as they change; NetworkClaim returns one claim, a copy.
func TestWaitingAndNetworkClaim(t *testing.T) {
	r, client := startRegistry(t, fixture()...)
	waiting := func() []string {
		var out []string
		for _, w := range r.Waiting() {
			status := "Pending"
			if w.Status != nil {
				status = string(w.Status.Status)
			}
			out = append(out, w.Claim+" "+w.Record.Prefix+" "+status)
		}
		return out
	}
	if got, want := waiting(), []string{"lb 172.16.0.0/12 Pending", "pods 10.96.0.0/16 Unavailable"}; !slices.Equal(got, want) {
		t.Errorf("Waiting() = %q, want %q", got, want)
	}

	c := fixture()[1]
	c.Status.AddressSpace[1].Status, c.Status.AddressSpace[1].Message = v1alpha1.AllocationAllocated, ""
	write(t, r, client, c)
	if got, want := waiting(), []string{"lb 172.16.0.0/12 Pending"}; !slices.Equal(got, want) {
		t.Errorf("after pods' record was allocated, Waiting() = %q, want %q", got, want)
	}
	if err := client.NetworkingV1alpha1().NetworkClaims().Delete(t.Context(), "lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, "lb deleted", func() bool { return r.claims["lb"] == nil })
	if got := waiting(); len(got) != 0 {
		t.Errorf("after lb was deleted, Waiting() = %q, want none", got)
	}

	got := r.NetworkClaim("pods")
	if got == nil || len(got.Spec.AddressSpace) != 2 || got.ManagedFields != nil {
		t.Fatalf("NetworkClaim(pods) = %+v", got)
	}
	got.Spec.AddressSpace[0].Prefix = "changed"
	if again := r.NetworkClaim("pods"); again.Spec.AddressSpace[0].Prefix != "10.244.0.0/16" {
		t.Errorf("changing a result changed the registry: %+v", again.Spec.AddressSpace[0])
	}
	if r.NetworkClaim("lb") != nil {
		t.Error("NetworkClaim(lb) after its deletion is not nil")
	}
}
