package allocation

import (
	"net/netip"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func TestDesiredStatus(t *testing.T) {
	services := &networkingv1alpha1.ResourceReference{Group: "", Resource: "services"}
	gateways := &networkingv1alpha1.ResourceReference{Group: "gateway.networking.k8s.io", Resource: "gateways"}
	record := func(prefix string, ref *networkingv1alpha1.ResourceReference, description string) networkingv1alpha1.AddressSpaceRecord {
		return networkingv1alpha1.AddressSpaceRecord{Reference: ref, Prefix: prefix, Description: description}
	}
	allocated := func(since int) decision { return decision{allocated: true, since: at(since)} }
	unavailable := func(since int, holderPrefix, holder string) decision {
		return decision{since: at(since), holder: holder, holderPrefix: netip.MustParsePrefix(holderPrefix)}
	}
	ready := func(status metav1.ConditionStatus, reason, message string, generation int64, lastTransition time.Time) metav1.Condition {
		return metav1.Condition{
			Type:               networkingv1alpha1.ConditionReady,
			Status:             status,
			Reason:             reason,
			Message:            message,
			ObservedGeneration: generation,
			LastTransitionTime: metav1.NewTime(lastTransition),
		}
	}
	other := metav1.Condition{Type: "Example", Status: metav1.ConditionTrue, Reason: "Example", Message: "kept as is", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(at(-5))}

	tests := []struct {
		name       string
		spec       []networkingv1alpha1.AddressSpaceRecord
		status     networkingv1alpha1.NetworkClaimStatus
		generation int64
		decisions  map[string]decision
		// want's conditions with a zero lastTransitionTime must be set to
		// the time of the call.
		want networkingv1alpha1.NetworkClaimStatus
	}{
		{
			name: "all allocated: spec order, reference and description from spec, date from since",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("fd00:10:96::/112", services, "Service ClusterIPs, IPv6"),
				record("10.96.0.0/12", services, "Service ClusterIPs"),
				record("192.168.0.0/16", nil, ""),
			},
			generation: 2,
			decisions: map[string]decision{
				"10.96.0.0/12":     allocated(3),
				"192.168.0.0/16":   allocated(5),
				"fd00:10:96::/112": allocated(4),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 2,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Reference: services, Prefix: "fd00:10:96::/112", Description: "Service ClusterIPs, IPv6", Date: metav1.NewTime(at(4)), Status: networkingv1alpha1.AllocationAllocated},
					{Reference: services, Prefix: "10.96.0.0/12", Description: "Service ClusterIPs", Date: metav1.NewTime(at(3)), Status: networkingv1alpha1.AllocationAllocated},
					{Prefix: "192.168.0.0/16", Date: metav1.NewTime(at(5)), Status: networkingv1alpha1.AllocationAllocated},
				},
				Conditions: []metav1.Condition{ready(metav1.ConditionTrue, reasonAllocated, "all 3 prefixes are allocated", 2, time.Time{})},
			},
		},
		{
			name: "one unavailable: message names the holder, Ready is False with reason Conflict",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("fd00:20::/64", gateways, "Gateway addresses"),
				record("10.96.0.0/16", gateways, "Gateway addresses, IPv4"),
			},
			generation: 1,
			decisions: map[string]decision{
				"10.96.0.0/16": unavailable(7, "10.96.0.0/12", "kube-apiserver"),
				"fd00:20::/64": allocated(6),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Reference: gateways, Prefix: "fd00:20::/64", Description: "Gateway addresses", Date: metav1.NewTime(at(6)), Status: networkingv1alpha1.AllocationAllocated},
					{
						Reference: gateways, Prefix: "10.96.0.0/16", Description: "Gateway addresses, IPv4", Date: metav1.NewTime(at(7)),
						Status:  networkingv1alpha1.AllocationUnavailable,
						Message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver",
					},
				},
				Conditions: []metav1.Condition{ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict,
					"1 of 2 prefixes unavailable: 10.96.0.0/16 overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver", 1, time.Time{})},
			},
		},
		{
			name: "several unavailable: Ready names the first in spec order and counts the others",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("10.0.0.0/8", nil, ""),
				record("fd00::/8", nil, ""),
				record("10.200.0.0/16", nil, ""),
			},
			generation: 4,
			decisions: map[string]decision{
				"10.0.0.0/8":    unavailable(1, "10.96.0.0/12", "kube-apiserver"),
				"10.200.0.0/16": allocated(2),
				"fd00::/8":      unavailable(3, "fd00:10:96::/112", "kube-apiserver"),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 4,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "10.0.0.0/8", Date: metav1.NewTime(at(1)), Status: networkingv1alpha1.AllocationUnavailable, Message: "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"},
					{Prefix: "fd00::/8", Date: metav1.NewTime(at(3)), Status: networkingv1alpha1.AllocationUnavailable, Message: "overlaps fd00:10:96::/112 held by NetworkClaim kube-apiserver"},
					{Prefix: "10.200.0.0/16", Date: metav1.NewTime(at(2)), Status: networkingv1alpha1.AllocationAllocated},
				},
				Conditions: []metav1.Condition{ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict,
					"2 of 3 prefixes unavailable: 10.0.0.0/8 overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver; and 1 more", 4, time.Time{})},
			},
		},
		{
			name: "Ready still True: lastTransitionTime kept, the rest updated; other conditions and stale records",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("10.0.0.0/16", nil, ""),
				record("10.1.0.0/16", nil, ""),
			},
			status: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "10.0.0.0/16", Date: metav1.NewTime(at(1)), Status: networkingv1alpha1.AllocationAllocated},
					{Prefix: "10.9.0.0/16", Date: metav1.NewTime(at(1)), Status: networkingv1alpha1.AllocationAllocated},
				},
				Conditions: []metav1.Condition{
					other,
					ready(metav1.ConditionTrue, reasonAllocated, "all 2 prefixes are allocated", 1, at(1)),
				},
			},
			generation: 2,
			decisions: map[string]decision{
				"10.0.0.0/16": allocated(1),
				"10.1.0.0/16": allocated(9),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 2,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "10.0.0.0/16", Date: metav1.NewTime(at(1)), Status: networkingv1alpha1.AllocationAllocated},
					{Prefix: "10.1.0.0/16", Date: metav1.NewTime(at(9)), Status: networkingv1alpha1.AllocationAllocated},
				},
				Conditions: []metav1.Condition{
					other,
					ready(metav1.ConditionTrue, reasonAllocated, "all 2 prefixes are allocated", 2, at(1)),
				},
			},
		},
		{
			name: "Ready still False: lastTransitionTime kept, message and generation updated",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("10.0.0.0/16", nil, ""),
			},
			status: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				Conditions: []metav1.Condition{
					ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict, "1 of 1 prefixes unavailable: 10.0.0.0/16 overlaps 10.0.0.0/8 held by NetworkClaim a", 1, at(1)),
				},
			},
			generation: 3,
			decisions: map[string]decision{
				"10.0.0.0/16": unavailable(1, "10.0.0.0/12", "b"),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 3,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "10.0.0.0/16", Date: metav1.NewTime(at(1)), Status: networkingv1alpha1.AllocationUnavailable, Message: "overlaps 10.0.0.0/12 held by NetworkClaim b"},
				},
				Conditions: []metav1.Condition{
					ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict, "1 of 1 prefixes unavailable: 10.0.0.0/16 overlaps 10.0.0.0/12 held by NetworkClaim b", 3, at(1)),
				},
			},
		},
		{
			name: "Ready turns False: lastTransitionTime is now",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("10.0.0.0/16", nil, ""),
			},
			status: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				Conditions:         []metav1.Condition{ready(metav1.ConditionTrue, reasonAllocated, "all 1 prefixes are allocated", 1, at(1)), other},
			},
			generation: 1,
			decisions: map[string]decision{
				"10.0.0.0/16": unavailable(8, "10.0.0.0/8", "a"),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "10.0.0.0/16", Date: metav1.NewTime(at(8)), Status: networkingv1alpha1.AllocationUnavailable, Message: "overlaps 10.0.0.0/8 held by NetworkClaim a"},
				},
				Conditions: []metav1.Condition{
					ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict, "1 of 1 prefixes unavailable: 10.0.0.0/16 overlaps 10.0.0.0/8 held by NetworkClaim a", 1, time.Time{}),
					other,
				},
			},
		},
		{
			name: "Ready turns True: lastTransitionTime is now",
			spec: []networkingv1alpha1.AddressSpaceRecord{
				record("fd00:10:96::/112", nil, ""),
			},
			status: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				Conditions: []metav1.Condition{
					ready(metav1.ConditionFalse, networkingv1alpha1.ReasonConflict, "1 of 1 prefixes unavailable: fd00:10:96::/112 overlaps fd00::/8 held by NetworkClaim a", 1, at(1)),
				},
			},
			generation: 1,
			decisions: map[string]decision{
				"fd00:10:96::/112": allocated(8),
			},
			want: networkingv1alpha1.NetworkClaimStatus{
				ObservedGeneration: 1,
				AddressSpace: []networkingv1alpha1.AddressSpaceStatus{
					{Prefix: "fd00:10:96::/112", Date: metav1.NewTime(at(8)), Status: networkingv1alpha1.AllocationAllocated},
				},
				Conditions: []metav1.Condition{ready(metav1.ConditionTrue, reasonAllocated, "all 1 prefixes are allocated", 1, time.Time{})},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claim := &networkingv1alpha1.NetworkClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "claim", Generation: tc.generation},
				Spec:       networkingv1alpha1.NetworkClaimSpec{AddressSpace: tc.spec},
				Status:     tc.status,
			}
			original := claim.DeepCopy()
			decisions := map[netip.Prefix]decision{}
			for p, d := range tc.decisions {
				decisions[netip.MustParsePrefix(p)] = d
			}

			before := time.Now().Truncate(time.Second)
			got := desiredStatus(claim, tc.generation, decisions)
			after := time.Now()

			if !apiequality.Semantic.DeepEqual(claim, original) {
				t.Errorf("desiredStatus changed the claim (-before +after):\n%s", diff.Diff(original, claim))
			}
			for i, s := range got.AddressSpace {
				for _, r := range claim.Spec.AddressSpace {
					if s.Reference != nil && s.Reference == r.Reference {
						t.Errorf("status record %d shares its reference with the spec; want a copy", i)
					}
				}
			}
			// Conditions that changed status are stamped with the time of
			// the call.
			want := tc.want.DeepCopy()
			for i, c := range want.Conditions {
				if !c.LastTransitionTime.IsZero() {
					continue
				}
				g := meta.FindStatusCondition(got.Conditions, c.Type)
				if g == nil {
					continue
				}
				if g.LastTransitionTime.Time.Before(before) || g.LastTransitionTime.Time.After(after) {
					t.Errorf("condition %s: lastTransitionTime %v, want the time of the call", c.Type, g.LastTransitionTime)
				}
				want.Conditions[i].LastTransitionTime = g.LastTransitionTime
			}
			if !apiequality.Semantic.DeepEqual(got, *want) {
				t.Errorf("unexpected status (-got +want):\n%s", diff.Diff(got, *want))
			}
		})
	}
}

func TestParseUnavailableMessage(t *testing.T) {
	for _, tc := range []struct {
		message    string
		wantPrefix string
		wantHolder string
		wantOK     bool
	}{
		{unavailableMessage(netip.MustParsePrefix("10.96.0.0/12"), "kube-apiserver"), "10.96.0.0/12", "kube-apiserver", true},
		{unavailableMessage(netip.MustParsePrefix("fd00:10:96::/112"), "services"), "fd00:10:96::/112", "services", true},
		{"overlaps 10.96.0.0/12 held by NetworkClaim ", "", "", false},
		{"overlaps 10.96.0.300/12 held by NetworkClaim a", "", "", false},
		{"written by hand", "", "", false},
		{"", "", "", false},
	} {
		p, holder, ok := parseUnavailableMessage(tc.message)
		if ok != tc.wantOK || holder != tc.wantHolder || (ok && p.String() != tc.wantPrefix) {
			t.Errorf("parseUnavailableMessage(%q) = %s, %q, %v; want %s, %q, %v", tc.message, p, holder, ok, tc.wantPrefix, tc.wantHolder, tc.wantOK)
		}
	}
}
