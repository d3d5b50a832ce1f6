package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// poolRecord asks for a /length from claim from.
func poolRecord(name, from string, length int32) networkingv1alpha1.AddressSpaceRecord {
	return networkingv1alpha1.AddressSpaceRecord{Name: name, From: &networkingv1alpha1.PrefixSource{Claim: from}, PrefixLength: &length}
}

func claimOf(name string, records ...networkingv1alpha1.AddressSpaceRecord) *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: records}}
}

func expectChosen(t *testing.T, c *networkingv1alpha1.NetworkClaim, name, prefix, parentClaim, parentPrefix string) {
	t.Helper()
	r := record(t, c, name)
	if r.Status != networkingv1alpha1.AllocationAllocated || r.Prefix != prefix || r.DelegatedFrom == nil ||
		*r.DelegatedFrom != (networkingv1alpha1.ClaimedPrefix{Claim: parentClaim, Prefix: parentPrefix}) {
		t.Errorf("NetworkClaim %s record %s: %+v, want Allocated %s from %s %s", c.Name, name, r, prefix, parentClaim, parentPrefix)
	}
}

// Delegation and pools on a real server: IPv4 and IPv6, three levels,
// exhaustion and promotion, records applied by server-side apply with and
// without names.
func TestPoolsAndDelegation(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)
	// Applied, as the library does: records without a name keep their
	// server-side-apply key (the prefix).
	org := applyv1alpha1.NetworkClaim("deleg-org").WithSpec(applyv1alpha1.NetworkClaimSpec().WithAddressSpace(
		applyv1alpha1.AddressSpaceRecord().WithPrefix("100.80.0.0/12").WithDelegable(true),
		applyv1alpha1.AddressSpaceRecord().WithPrefix("fd10::/32").WithDelegable(true),
	))
	if _, err := claims.Apply(t.Context(), org, metav1.ApplyOptions{FieldManager: "test", Force: true}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	t.Cleanup(func() { _ = claims.Delete(context.Background(), "deleg-org", metav1.DeleteOptions{}) })
	expectAllocated(t, waitDecided(t, claims, "deleg-org"), "100.80.0.0/12")

	rir := poolRecord("block", "deleg-org", 14)
	rir.Delegable = true
	createClaims(t, claims,
		claimOf("deleg-rir", rir),
		claimOf("deleg-cluster-a", poolRecord("pods", "deleg-org", 16), poolRecord("pods-v6", "deleg-org", 48)),
	)
	expectChosen(t, waitDecided(t, claims, "deleg-rir"), "block", "100.80.0.0/14", "deleg-org", "100.80.0.0/12")
	a := waitDecided(t, claims, "deleg-cluster-a")
	expectChosen(t, a, "pods", "100.84.0.0/16", "deleg-org", "100.80.0.0/12")
	expectChosen(t, a, "pods-v6", "fd10::/48", "deleg-org", "fd10::/32")
	expectReady(t, a, metav1.ConditionTrue, "Allocated")

	// A third level, and an exact sub-prefix taken from it.
	createClaims(t, claims,
		claimOf("deleg-lir", func() networkingv1alpha1.AddressSpaceRecord {
			r := poolRecord("block", "deleg-rir", 15)
			r.Delegable = true
			return r
		}()),
	)
	expectChosen(t, waitDecided(t, claims, "deleg-lir"), "block", "100.80.0.0/15", "deleg-rir", "100.80.0.0/14")
	createClaims(t, claims, claimOf("deleg-customer", networkingv1alpha1.AddressSpaceRecord{Prefix: "100.81.0.0/24", From: &networkingv1alpha1.PrefixSource{Claim: "deleg-lir"}}))
	customer := waitDecided(t, claims, "deleg-customer")
	if r := record(t, customer, "100.81.0.0/24"); r.Status != networkingv1alpha1.AllocationAllocated || r.DelegatedFrom == nil || r.DelegatedFrom.Claim != "deleg-lir" {
		t.Errorf("customer: %+v", r)
	}
	// Not taken from a pool, the same space conflicts, naming the widest
	// holder in fields.
	createClaims(t, claims, newClaim("deleg-squatter", "100.81.0.0/25"))
	squatter := record(t, waitDecided(t, claims, "deleg-squatter"), "100.81.0.0/25")
	if squatter.Reason != networkingv1alpha1.ReasonConflict || squatter.ConflictsWith == nil || *squatter.ConflictsWith != (networkingv1alpha1.ClaimedPrefix{Claim: "deleg-org", Prefix: "100.80.0.0/12"}) {
		t.Errorf("squatter: %+v", squatter)
	}

	// The rest of the org's /12 in /14s: two fit (one is the rir's), the
	// third waits for room.
	createClaims(t, claims, claimOf("deleg-b", poolRecord("p", "deleg-org", 14)), claimOf("deleg-c", poolRecord("p", "deleg-org", 14)))
	waitDecided(t, claims, "deleg-b")
	waitDecided(t, claims, "deleg-c")
	createClaims(t, claims, claimOf("deleg-d", poolRecord("p", "deleg-org", 14)))
	d := waitDecided(t, claims, "deleg-d")
	if r := record(t, d, "p"); r.Status != networkingv1alpha1.AllocationUnavailable || r.Reason != networkingv1alpha1.ReasonPoolExhausted ||
		r.Message != "no free /14 in 100.80.0.0/12 of NetworkClaim deleg-org" || r.Prefix != "" {
		t.Errorf("deleg-d: %+v, want PoolExhausted naming the pool", r)
	}
	expectReady(t, d, metav1.ConditionFalse, networkingv1alpha1.ReasonPoolExhausted)
	waitForEvent(t, s.ClientConfig, "deleg-d", "Unavailable", "no free /14 in 100.80.0.0/12")
	// Space frees up: the waiter gets the freed /14.
	freed := record(t, waitDecided(t, claims, "deleg-b"), "p").Prefix
	if err := claims.Delete(t.Context(), "deleg-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d = waitForClaim(t, claims, "deleg-d", "allocated", func(c *networkingv1alpha1.NetworkClaim) bool {
		return len(c.Status.AddressSpace) == 1 && c.Status.AddressSpace[0].Status == networkingv1alpha1.AllocationAllocated
	})
	expectChosen(t, d, "p", freed, "deleg-org", "100.80.0.0/12")

	// What is written names the field and what to write.
	_, err := claims.Create(t.Context(), claimOf("deleg-bad", poolRecord("", "deleg-org", 16)), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.addressSpace[0].name") || !strings.Contains(err.Error(), "name a record taken from a pool") {
		t.Errorf("a pool record without a name: %v", err)
	}
}

// Stopped in the middle of a burst of pool records, the registry keeps
// every prefix it chose, and chooses no overlapping one after the restart.
func TestRestartInTheMiddleOfAPoolBurst(t *testing.T) {
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	claims := networkClaims(first.ClientConfig)
	pool := claimOf("pool", networkingv1alpha1.AddressSpaceRecord{Prefix: "10.0.0.0/16", Delegable: true}, networkingv1alpha1.AddressSpaceRecord{Prefix: "fd00::/40", Delegable: true})
	if _, err := claims.Create(t.Context(), pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDecided(t, claims, "pool")
	before, recorded := stopInTheMiddleOfABurst(t, first, 80, 4, func(j int) *networkingv1alpha1.NetworkClaim {
		return claimOf(fmt.Sprintf("pool-burst-%02d", j), poolRecord("v4", "pool", 24), poolRecord("v6", "pool", 48))
	})
	_, now := decidedAfterRestart(t, first, recorded)
	// Within the pool, first fit packs: the /24s and /48s are the lowest
	// ones, each taken once.
	seen := map[netip.Prefix]string{}
	for name, prefixes := range now {
		if name == "pool" {
			continue
		}
		for _, p := range prefixes {
			if other, ok := seen[p]; ok {
				t.Errorf("%s is held by %s and %s", p, other, name)
			}
			seen[p] = name
		}
	}
	t.Logf("%d claims before the stop, %d with an allocation; %d allocations after the restart", len(before), len(recorded), len(seen))
}
