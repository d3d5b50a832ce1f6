package robustness

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func claim(name, rv string, records ...networkingv1alpha1.AddressSpaceStatus) networkingv1alpha1.NetworkClaim {
	c := networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Generation: 1}}
	c.Status.ObservedGeneration = 1
	for _, r := range records {
		c.Spec.AddressSpace = append(c.Spec.AddressSpace, networkingv1alpha1.AddressSpaceRecord{Name: r.Name})
	}
	c.Status.AddressSpace = records
	return c
}

func allocated(name, prefix string) networkingv1alpha1.AddressSpaceStatus {
	return networkingv1alpha1.AddressSpaceStatus{Name: name, Prefix: prefix, Status: networkingv1alpha1.AllocationAllocated}
}

func TestCheckRegistry(t *testing.T) {
	pool := claim("pool", "10", allocated("pool", "10.0.0.0/16"))
	delegated := allocated("x", "10.0.1.0/24")
	delegated.DelegatedFrom = &networkingv1alpha1.ClaimedPrefix{Claim: "pool", Prefix: "10.0.0.0/16"}
	waiting := networkingv1alpha1.AddressSpaceStatus{Name: "y", Prefix: "10.1.0.0/24", Status: networkingv1alpha1.AllocationUnavailable,
		ConflictsWith: &networkingv1alpha1.ClaimedPrefix{Claim: "first", Prefix: "10.1.0.0/24"}}
	for _, tc := range []struct {
		name   string
		events []ClaimEvent
		want   string
	}{
		{name: "a delegation overlaps its pool", events: []ClaimEvent{{Type: Added, Claim: pool}, {Type: Added, Claim: claim("x", "11", delegated)}}},
		{name: "a conflicting claim waits", events: []ClaimEvent{
			{Type: Added, Claim: claim("first", "10", allocated("y", "10.1.0.0/24"))},
			{Type: Added, Claim: claim("second", "11", waiting)},
		}},
		{name: "one prefix Allocated twice", events: []ClaimEvent{
			{Type: Added, Claim: claim("first", "10", allocated("y", "10.1.0.0/24"))},
			{Type: Added, Claim: claim("second", "11", allocated("y", "10.1.0.0/24"))},
		}, want: "is Allocated to"},
		{name: "overlapping prefixes Allocated", events: []ClaimEvent{
			{Type: Added, Claim: claim("first", "10", allocated("y", "10.1.0.0/16"))},
			{Type: Added, Claim: claim("second", "11", allocated("y", "10.1.2.0/24"))},
		}, want: "overlap"},
		{name: "released while the watch was gone", events: []ClaimEvent{
			{Type: Added, Claim: claim("first", "10", allocated("y", "10.1.0.0/24"))},
			{Type: Reset},
			{Type: Added, Claim: claim("second", "12", allocated("y", "10.1.0.0/24"))},
		}},
		{name: "a delegation named in another form", events: []ClaimEvent{
			{Type: Added, Claim: claim("pool", "10", allocated("pool", "fd00::/48"))},
			{Type: Added, Claim: claim("x", "11", func() networkingv1alpha1.AddressSpaceStatus {
				r := allocated("x", "fd00:0:0:1::/64")
				r.DelegatedFrom = &networkingv1alpha1.ClaimedPrefix{Claim: "pool", Prefix: "FD00:0000::/48"}
				return r
			}())},
		}},
		{name: "released, then allocated to another", events: []ClaimEvent{
			{Type: Added, Claim: claim("first", "10", allocated("y", "10.1.0.0/24"))},
			{Type: Deleted, Claim: claim("first", "11", allocated("y", "10.1.0.0/24"))},
			{Type: Added, Claim: claim("second", "12", allocated("y", "10.1.0.0/24"))},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckRegistry(tc.events)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a good history: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation saying %q", err, tc.want)
			}
		})
	}
}

func TestCheckRegistrySettled(t *testing.T) {
	waiting := networkingv1alpha1.AddressSpaceStatus{Name: "y", Prefix: "10.1.0.0/24", Status: networkingv1alpha1.AllocationUnavailable,
		ConflictsWith: &networkingv1alpha1.ClaimedPrefix{Claim: "first", Prefix: "10.1.0.0/24"}}
	undecided := claim("late", "12", allocated("z", "10.2.0.0/24"))
	undecided.Generation = 2
	for _, tc := range []struct {
		name   string
		claims []networkingv1alpha1.NetworkClaim
		want   string
	}{
		{name: "waiting behind a holder", claims: []networkingv1alpha1.NetworkClaim{claim("first", "10", allocated("y", "10.1.0.0/24")), claim("second", "11", waiting)}},
		{name: "waiting behind a holder that released", claims: []networkingv1alpha1.NetworkClaim{claim("second", "11", waiting)}, want: "should have been promoted"},
		{name: "not decided", claims: []networkingv1alpha1.NetworkClaim{undecided}, want: "is not decided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRegistrySettled(tc.claims)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a settled registry: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a violation saying %q", err, tc.want)
			}
		})
	}
}
