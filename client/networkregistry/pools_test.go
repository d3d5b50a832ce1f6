package networkregistry

import (
	"fmt"
	"math/big"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// poolStatus is a pool's status as the registry writes it: the counts of
// addresses in decimal.
func poolStatus(size, allocated, reserved, cooling, free string, used int32, largest string, subPrefixes, tenants int32, coolingPrefixes ...v1alpha1.CoolingPrefix) *v1alpha1.PoolStatus {
	return &v1alpha1.PoolStatus{
		Addresses: size, Allocated: allocated, Reserved: reserved, Cooling: cooling, Free: free,
		UsedPercent: used, LargestFreePrefix: largest, SubPrefixes: subPrefixes, Tenants: tenants,
		CoolingPrefixes: coolingPrefixes,
	}
}

var reusableAt = allocatedAt.Add(time.Hour)

// pools is a registry of delegable prefixes: with a policy and status,
// without status yet, and one taken from another in turn; the records
// taken from them, a claim holding two of one pool's, an orphan and a
// waiting record.
func pools() []*v1alpha1.NetworkClaim {
	orgPods := newClaim("org-pods",
		rec{name: "v4", prefix: "10.0.0.0/8", ref: &podsRef, description: "pod space", delegable: true, status: v1alpha1.AllocationAllocated},
		rec{prefix: "fd00::/32", ref: &podsRef, delegable: true, status: v1alpha1.AllocationAllocated})
	orgPods.Spec.AddressSpace[0].Pool = &v1alpha1.PoolPolicy{
		MinPrefixLength: ptr[int32](16), MaxPrefixLength: ptr[int32](24), MaxRecordsPerClaim: ptr[int32](2),
		Reservations:            []v1alpha1.PoolReservation{{Prefix: "10.255.0.0/16", Description: "infrastructure"}},
		ReuseGracePeriodSeconds: ptr[int64](3600),
	}
	// Three /16s allocated, one reserved, one cooling.
	orgPods.Status.AddressSpace[0].Pool = poolStatus("16777216", "196608", "65536", "65536", "16449536", 1, "10.64.0.0/10", 3, 2,
		v1alpha1.CoolingPrefix{Prefix: "10.1.0.0/16", Claim: "beta", ReusableAt: metav1.NewTime(reusableAt)})
	// 2^96 addresses, one /48 (2^80) allocated.
	orgPods.Status.AddressSpace[1].Pool = poolStatus("79228162514264337593543950336", "1208925819614629174706176", "0", "0",
		"79226953588444722964369244160", 0, "fd00:0:8000::/33", 1, 1)
	clusterB := newClaim("cluster-b",
		rec{prefix: "10.2.0.0/16", from: from("org-pods", ""), status: v1alpha1.AllocationAllocated, delegatedFrom: heldBy("org-pods", "10.0.0.0/8")},
		rec{name: "spare", from: from("org-pods", "10.0.0.0/8"), length: 16, status: v1alpha1.AllocationAllocated, chosen: "10.3.0.0/16", delegatedFrom: heldBy("org-pods", "10.0.0.0/8")},
		rec{name: "third", from: from("org-pods", ""), length: 16, status: v1alpha1.AllocationUnavailable, reason: v1alpha1.ReasonPoolPolicy,
			message: "NetworkClaim cluster-b already holds 2 records from 10.0.0.0/8 of NetworkClaim org-pods, its maxRecordsPerClaim"})
	return []*v1alpha1.NetworkClaim{
		orgPods,
		// Allocated; the registry has not written its utilization yet.
		newClaim("org-services", rec{prefix: "172.16.0.0/12", delegable: true, status: v1alpha1.AllocationAllocated}),
		newClaim("cluster-a",
			rec{name: "pods-v4", from: from("org-pods", ""), length: 16, ref: &podsRef, delegable: true,
				status: v1alpha1.AllocationAllocated, chosen: "10.0.0.0/16", delegatedFrom: heldBy("org-pods", "10.0.0.0/8")},
			rec{name: "pods-v6", from: from("org-pods", "fd00::/32"), length: 48, ref: &podsRef,
				status: v1alpha1.AllocationAllocated, chosen: "fd00::/48", delegatedFrom: heldBy("org-pods", "fd00::/32")}),
		clusterB,
		// A tenant of cluster-a's pool, not of org-pods'.
		newClaim("node-1", rec{name: "pods", from: from("cluster-a", ""), length: 24,
			status: v1alpha1.AllocationAllocated, chosen: "10.0.0.0/24", delegatedFrom: heldBy("cluster-a", "10.0.0.0/16")}),
		// Its parent is gone: nobody's tenant.
		newClaim("orphan", rec{prefix: "10.200.0.0/16", from: from("gone", ""), status: v1alpha1.AllocationAllocated}),
		// Not decided yet: not a pool.
		newClaim("late", rec{prefix: "192.168.0.0/16", delegable: true}),
	}
}

// poolSummary renders a pool for comparisons: its prefix, claim, policy,
// utilization, sub-prefixes and tenants.
func poolSummary(p Pool) string {
	policy := "no policy"
	if pp := p.Policy; pp != nil {
		policy = fmt.Sprintf("policy %d-%d max %d grace %s reserved %v", pp.MinPrefixLength, pp.MaxPrefixLength, pp.MaxRecordsPerClaim, pp.ReuseGracePeriod, pp.Reservations)
	}
	utilization := "no utilization"
	if u := p.Utilization; u != nil {
		utilization = fmt.Sprintf("size %s allocated %s reserved %s cooling %s free %s used %d%% largest %s sub %d tenants %d cooling %v",
			u.Size, u.Allocated, u.Reserved, u.Cooling, u.Free, u.UsedPercent, u.LargestFreePrefix, u.SubPrefixes, u.Tenants, u.CoolingPrefixes)
	}
	return fmt.Sprintf("%s %s: %s; %s; sub-prefixes %q; tenants %q", p.Prefix, p.Claim, policy, utilization, held(p.SubPrefixes), p.Tenants)
}

func TestPools(t *testing.T) {
	r, _ := startRegistry(t, pools()...)
	cooling := fmt.Sprint([]CoolingPrefix{{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Claim: "beta", ReusableAt: reusableAt}})
	want := []string{
		`10.0.0.0/16 cluster-a: no policy; no utilization; sub-prefixes ["10.0.0.0/24 node-1"]; tenants ["node-1"]`,
		`10.0.0.0/8 org-pods: policy 16-24 max 2 grace 1h0m0s reserved [{10.255.0.0/16 infrastructure}]; ` +
			`size 16777216 allocated 196608 reserved 65536 cooling 65536 free 16449536 used 1% largest 10.64.0.0/10 sub 3 tenants 2 cooling ` + cooling + `; ` +
			`sub-prefixes ["10.0.0.0/16 cluster-a" "10.2.0.0/16 cluster-b" "10.3.0.0/16 cluster-b"]; tenants ["cluster-a" "cluster-b"]`,
		`fd00::/32 org-pods: no policy; ` +
			`size 79228162514264337593543950336 allocated 1208925819614629174706176 reserved 0 cooling 0 free 79226953588444722964369244160 used 0% largest fd00:0:8000::/33 sub 1 tenants 1 cooling []; ` +
			`sub-prefixes ["fd00::/48 cluster-a"]; tenants ["cluster-a"]`,
		`172.16.0.0/12 org-services: no policy; no utilization; sub-prefixes []; tenants []`,
	}
	got := r.Pools()
	var summaries []string
	for _, p := range got {
		summaries = append(summaries, poolSummary(p))
	}
	if !slices.Equal(summaries, want) {
		t.Errorf("Pools():\n%s\nwant:\n%s", strings.Join(summaries, "\n"), strings.Join(want, "\n"))
	}

	// The allocation's own fields, as Allocations has them.
	wantAllocation := Allocation{Claim: "org-pods", Name: "v4", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Reference: &podsRef, Description: "pod space", Delegable: true, Date: allocatedAt}
	if len(got) < 2 || !reflect.DeepEqual(got[1].Allocation, wantAllocation) {
		t.Errorf("Pools()[1].Allocation = %+v, want %+v", got[1].Allocation, wantAllocation)
	}
	// An IPv6 pool counts beyond 64 bits, exactly.
	if size := got[2].Utilization.Size; size.IsUint64() || size.Cmp(new(big.Int).Lsh(big.NewInt(1), 96)) != 0 {
		t.Errorf("the size of fd00::/32 = %s, want 2^96", size)
	}

	// Pool finds each of them, the same as Pools.
	for _, p := range got {
		one, ok := r.Pool(p.Claim, p.Prefix)
		if !ok || !reflect.DeepEqual(one, p) {
			t.Errorf("Pool(%s, %s) = %s, %t; want %s", p.Claim, p.Prefix, poolSummary(one), ok, poolSummary(p))
		}
	}
	notPools := []struct {
		claim, prefix string
	}{
		{"cluster-b", "10.2.0.0/16"}, // allocated, not delegable
		{"late", "192.168.0.0/16"},   // not decided
		{"org-pods", "10.0.0.0/16"},  // not its prefix
		{"nobody", "10.0.0.0/8"},
	}
	for _, tc := range notPools {
		if p, ok := r.Pool(tc.claim, netip.MustParsePrefix(tc.prefix)); ok {
			t.Errorf("Pool(%s, %s) = %s; want none", tc.claim, tc.prefix, poolSummary(p))
		}
	}

	// Results are copies: changing one changes nothing in the registry.
	got[1].SubPrefixes[0].DelegatedFrom.Claim = "changed"
	got[1].Reference.Resource = "changed"
	got[1].Utilization.Size.SetInt64(0)
	got[1].Tenants[0] = "changed"
	if again := poolSummary(r.Pools()[1]); again != want[1] {
		t.Errorf("changing a result changed the registry: %s", again)
	}
	if again, _ := r.Pool("org-pods", netip.MustParsePrefix("10.0.0.0/8")); again.Reference.Resource != "pods" {
		t.Errorf("changing a result changed the registry: %+v", again.Reference)
	}
}

// Pools follows the registry's writes: utilization once written, tenants
// as they come and go.
func TestPoolsUpdates(t *testing.T) {
	r, client := startRegistry(t, pools()...)
	services := func() Pool {
		p, ok := r.Pool("org-services", netip.MustParsePrefix("172.16.0.0/12"))
		if !ok {
			t.Fatal("org-services' pool is gone")
		}
		return p
	}
	// The registry catches up: a tenant, and the utilization.
	c := pools()[1]
	c.Status.AddressSpace[0].Pool = poolStatus("1048576", "4096", "0", "0", "1044480", 0, "172.16.128.0/17", 1, 1)
	write(t, r, client, c)
	write(t, r, client, newClaim("alpha", rec{name: "services", from: from("org-services", ""), length: 20,
		status: v1alpha1.AllocationAllocated, chosen: "172.16.0.0/20", delegatedFrom: heldBy("org-services", "172.16.0.0/12")}))
	want := `172.16.0.0/12 org-services: no policy; size 1048576 allocated 4096 reserved 0 cooling 0 free 1044480 used 0% largest 172.16.128.0/17 sub 1 tenants 1 cooling []; ` +
		`sub-prefixes ["172.16.0.0/20 alpha"]; tenants ["alpha"]`
	if got := poolSummary(services()); got != want {
		t.Errorf("after the registry caught up:\n%s\nwant:\n%s", got, want)
	}
	// The tenant leaves.
	if err := client.NetworkingV1alpha1().NetworkClaims().Delete(t.Context(), "alpha", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, r, "alpha deleted", func() bool { return r.claims["alpha"] == nil })
	if got := services(); len(got.SubPrefixes) != 0 || len(got.Tenants) != 0 {
		t.Errorf("after its tenant left: %s", poolSummary(got))
	}
	// A status whose counts are not numbers (validation admits none) is
	// no utilization rather than a wrong one.
	c.Status.AddressSpace[0].Pool.Free = "lots"
	write(t, r, client, c)
	if got := services(); got.Utilization != nil {
		t.Errorf("utilization of a status that counts %q: %s", "lots", poolSummary(got))
	}
}
