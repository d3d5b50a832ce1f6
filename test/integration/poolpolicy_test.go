package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func ptrTo[T any](v T) *T { return &v }

// A pool's policy, reservations, grace period and utilization through the
// API: records that break the policy wait with PoolPolicy, first fit skips
// the reservation, the pool's status counts what is taken, crossing 80%
// raises PoolPressure and an event, and a released sub-prefix rests before
// another claim gets it.
func TestPoolPolicyAndUtilization(t *testing.T) {
	s := sharedServer(t)
	claims := networkClaims(s.ClientConfig)

	// A policy on a record that is not delegable is refused, naming the field.
	bad := claimOf("pp-bad", networkingv1alpha1.AddressSpaceRecord{Prefix: "100.91.0.0/24", Pool: &networkingv1alpha1.PoolPolicy{}})
	if _, err := claims.Create(t.Context(), bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.addressSpace[0].pool") || !strings.Contains(err.Error(), "add delegable: true") {
		t.Errorf("a pool policy without delegable: %v, want Invalid naming spec.addressSpace[0].pool", err)
	}

	org := claimOf("pp-org", networkingv1alpha1.AddressSpaceRecord{Prefix: "100.90.0.0/24", Delegable: true, Pool: &networkingv1alpha1.PoolPolicy{
		MinPrefixLength:         ptrTo(int32(26)),
		MaxPrefixLength:         ptrTo(int32(28)),
		MaxRecordsPerClaim:      ptrTo(int32(2)),
		Reservations:            []networkingv1alpha1.PoolReservation{{Prefix: "100.90.0.0/26", Description: "gateways"}},
		ReuseGracePeriodSeconds: ptrTo(int64(3)),
	}})
	createClaims(t, claims, org)
	t.Cleanup(func() {
		for _, name := range []string{"pp-org", "pp-a", "pp-b", "pp-c"} {
			_ = claims.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	expectAllocated(t, waitDecided(t, claims, "pp-org"), "100.90.0.0/24")

	createClaims(t, claims, claimOf("pp-a", poolRecord("p1", "pp-org", 26), poolRecord("p2", "pp-org", 28), poolRecord("p3", "pp-org", 27)))
	a := waitDecided(t, claims, "pp-a")
	expectChosen(t, a, "p1", "100.90.0.64/26", "pp-org", "100.90.0.0/24")
	expectChosen(t, a, "p2", "100.90.0.128/28", "pp-org", "100.90.0.0/24")
	if r := record(t, a, "p3"); r.Reason != networkingv1alpha1.ReasonPoolPolicy || !strings.Contains(r.Message, "a claim may hold at most 2 records from pool 100.90.0.0/24 of NetworkClaim pp-org") {
		t.Errorf("a third record from a pool that allows two per claim: %+v, want PoolPolicy", r)
	}
	createClaims(t, claims, claimOf("pp-b", poolRecord("small", "pp-org", 30), poolRecord("p", "pp-org", 27)))
	b := waitDecided(t, claims, "pp-b")
	if r := record(t, b, "small"); r.Reason != networkingv1alpha1.ReasonPoolPolicy || !strings.Contains(r.Message, "ask for /26 to /28") {
		t.Errorf("a /30 from a pool of /26 to /28: %+v, want PoolPolicy", r)
	}
	expectChosen(t, b, "p", "100.90.0.160/27", "pp-org", "100.90.0.0/24")

	// 64 + 16 + 32 allocated, the /26 reserved: 80 of 256 free, 68% used.
	orgStatus := waitForClaim(t, claims, "pp-org", "the pool's utilization", func(c *networkingv1alpha1.NetworkClaim) bool {
		p := c.Status.AddressSpace[0].Pool
		return p != nil && p.SubPrefixes == 3
	})
	want := networkingv1alpha1.PoolStatus{Addresses: "256", Allocated: "112", Reserved: "64", Cooling: "0", Free: "80", UsedPercent: 68, LargestFreePrefix: "100.90.0.192/26", SubPrefixes: 3, Tenants: 2}
	if got := *orgStatus.Status.AddressSpace[0].Pool; !equalPool(got, want) {
		t.Errorf("pool status %+v, want %+v", got, want)
	}
	if c := meta.FindStatusCondition(orgStatus.Status.Conditions, networkingv1alpha1.ConditionPoolPressure); c == nil || c.Status != metav1.ConditionFalse || c.Reason != networkingv1alpha1.ReasonBelow80Percent {
		t.Errorf("PoolPressure at 68%%: %+v, want False Below80Percent", c)
	}

	// Another /26 fills the pool to 93%: pressure, and a warning.
	createClaims(t, claims, claimOf("pp-c", poolRecord("p", "pp-org", 26)))
	expectChosen(t, waitDecided(t, claims, "pp-c"), "p", "100.90.0.192/26", "pp-org", "100.90.0.0/24")
	orgStatus = waitForClaim(t, claims, "pp-org", "PoolPressure", func(c *networkingv1alpha1.NetworkClaim) bool {
		return meta.IsStatusConditionTrue(c.Status.Conditions, networkingv1alpha1.ConditionPoolPressure)
	})
	if c := meta.FindStatusCondition(orgStatus.Status.Conditions, networkingv1alpha1.ConditionPoolPressure); c.Reason != networkingv1alpha1.ReasonAbove80Percent {
		t.Errorf("PoolPressure at 93%%: %+v, want reason Above80Percent", c)
	}
	waitForEvent(t, s.ClientConfig, "pp-org", "PoolNearlyFull", "Pool 100.90.0.0/24 is 93% used")

	// b goes: its /27 rests for the grace period; an exact record of
	// another claim waits for it, then gets it.
	if err := claims.Delete(t.Context(), "pp-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	orgStatus = waitForClaim(t, claims, "pp-org", "the released /27 cooling", func(c *networkingv1alpha1.NetworkClaim) bool {
		p := c.Status.AddressSpace[0].Pool
		return p != nil && len(p.CoolingPrefixes) == 1
	})
	if got := orgStatus.Status.AddressSpace[0].Pool.CoolingPrefixes[0]; got.Prefix != "100.90.0.160/27" || got.Claim != "pp-b" {
		t.Errorf("cooling %+v, want 100.90.0.160/27 released by pp-b", got)
	}
	if got := orgStatus.Status.AddressSpace[0].Pool.Cooling; got != "32" {
		t.Errorf("cooling addresses %s, want 32", got)
	}
	if err := claims.Delete(t.Context(), "pp-c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createClaims(t, claims, claimOf("pp-d", networkingv1alpha1.AddressSpaceRecord{Prefix: "100.90.0.160/27", From: &networkingv1alpha1.PrefixSource{Claim: "pp-org"}}))
	t.Cleanup(func() { _ = claims.Delete(context.Background(), "pp-d", metav1.DeleteOptions{}) })
	if r := record(t, waitDecided(t, claims, "pp-d"), "100.90.0.160/27"); r.Reason != networkingv1alpha1.ReasonReuseGracePeriod || !strings.Contains(r.Message, "was released by NetworkClaim pp-b") {
		t.Errorf("an exact record of a cooling prefix: %+v, want ReuseGracePeriod", r)
	}
	waitForClaim(t, claims, "pp-d", "the prefix once its grace period ends", func(c *networkingv1alpha1.NetworkClaim) bool {
		return c.Status.ObservedGeneration == c.Generation && len(c.Status.AddressSpace) == 1 && c.Status.AddressSpace[0].Status == networkingv1alpha1.AllocationAllocated
	})
	// And the pool fell below 80%: pressure off, and said so.
	waitForClaim(t, claims, "pp-org", "PoolPressure False", func(c *networkingv1alpha1.NetworkClaim) bool {
		return meta.IsStatusConditionFalse(c.Status.Conditions, networkingv1alpha1.ConditionPoolPressure)
	})
	waitForEvent(t, s.ClientConfig, "pp-org", "PoolUtilizationNormal", "below 80%")

	body, err := kubernetes.NewForConfigOrDie(s.ClientConfig).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	for _, want := range []string{
		`networkclaim_pool_addresses{claim="pp-org",prefix="100.90.0.0/24",state="reserved"} 64`,
		`networkclaim_pool_used_ratio{claim="pp-org",prefix="100.90.0.0/24"}`,
		`networkclaim_pool_sub_prefixes{claim="pp-org",prefix="100.90.0.0/24"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// equalPool compares the figures of two pool statuses.
func equalPool(got, want networkingv1alpha1.PoolStatus) bool {
	return got.Addresses == want.Addresses && got.Allocated == want.Allocated && got.Reserved == want.Reserved && got.Cooling == want.Cooling &&
		got.Free == want.Free && got.UsedPercent == want.UsedPercent && got.LargestFreePrefix == want.LargestFreePrefix &&
		got.SubPrefixes == want.SubPrefixes && got.Tenants == want.Tenants
}
