package networkregistry

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

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
	prefix      string
	ref         *v1alpha1.ResourceReference
	description string
	status      v1alpha1.AllocationStatus
	message     string
}

// newClaim returns a claim of generation 1 whose status, when every record
// has a decision, is the registry's decision on that generation.
func newClaim(name string, records ...rec) *v1alpha1.NetworkClaim {
	c := &v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	decided, ready := true, true
	for _, r := range records {
		c.Spec.AddressSpace = append(c.Spec.AddressSpace, v1alpha1.AddressSpaceRecord{Prefix: r.prefix, Reference: copyReference(r.ref), Description: r.description})
		if r.status == "" {
			decided = false
			continue
		}
		ready = ready && r.status == v1alpha1.AllocationAllocated
		c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{
			Prefix: r.prefix, Reference: copyReference(r.ref), Description: r.description,
			Date: metav1.NewTime(allocatedAt), Status: r.status, Message: r.message,
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

// Updates and deletions replace a claim's allocations: nothing stale stays.
func TestUpdatesAndDeletions(t *testing.T) {
	r, client := startRegistry(t, fixture()...)
	steps := []struct {
		name   string
		change func(t *testing.T)
		query  string
		want   []string
	}{
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

func TestClaim(t *testing.T) {
	r, client := startRegistry(t)
	// The fake's tracker cannot apply; the test reads what was sent.
	var sent []clienttesting.PatchActionImpl
	client.PrependReactor("patch", "networkclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchActionImpl)
		sent = append(sent, patch)
		claim := &v1alpha1.NetworkClaim{}
		if err := json.Unmarshal(patch.GetPatch(), claim); err != nil {
			return true, nil, err
		}
		claim.Generation = 1
		return true, claim, nil
	})
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

	errorCases := []struct {
		name     string
		registry *Registry
		records  []Record
		wantErr  string
	}{
		{name: "no field manager", registry: New(client, ""), records: records, wantErr: "no field manager"},
		{name: "host bits set", registry: r, records: []Record{{Prefix: netip.MustParsePrefix("10.96.0.1/12")}}, wantErr: "claim 10.96.0.0/12"},
		{name: "no prefix", registry: r, records: []Record{{Description: "x"}}, wantErr: "record 0 has no prefix"},
	}
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.registry.Claim(t.Context(), "svc", tc.records)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "NetworkClaim svc") {
				t.Fatalf("Claim: %v; want an error naming the claim and containing %q", err, tc.wantErr)
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
