package registrycli

import (
	"bytes"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

func TestAddressCount(t *testing.T) {
	pow2 := func(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }
	sub := func(a, b *big.Int) *big.Int { return new(big.Int).Sub(a, b) }
	tests := []struct {
		n    *big.Int
		want string
	}{
		{big.NewInt(0), "0"},
		{big.NewInt(4096), "4096"},
		{pow2(16), "65536"},
		{big.NewInt(999_999), "999999"},
		{big.NewInt(1_000_000), "1M"},
		{pow2(20), "1.05M"},
		{big.NewInt(1_036_288), "1.04M"},
		{big.NewInt(16_449_536), "16.4M"},
		{pow2(24), "16.8M"},
		{big.NewInt(150_000_000), "150M"},
		// Rounded first: not 1000M.
		{big.NewInt(999_999_999), "1G"},
		{pow2(32), "4.29G"},
		{big.NewInt(999_999_999_999), "1e12"},
		{pow2(48), "2.81e14"},
		{pow2(64), "1.84e19"},
		{new(big.Int).Mul(big.NewInt(3), pow2(80)), "3.63e24"},
		{pow2(96), "7.92e28"},
		{sub(pow2(96), new(big.Int).Mul(big.NewInt(3), pow2(80))), "7.92e28"},
		{pow2(128), "3.4e38"},
	}
	for _, tc := range tests {
		if got := addressCount(tc.n); got != tc.want {
			t.Errorf("addressCount(%s) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestPolicyString(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/32")
	n := func(v int32) *int32 { return &v }
	seconds := func(v int64) *int64 { return &v }
	tests := []struct {
		name   string
		policy *v1alpha1.PoolPolicy
		pool   string
		want   string
	}{
		{name: "none", policy: nil, want: ""},
		{name: "empty", policy: &v1alpha1.PoolPolicy{}, want: ""},
		{name: "every field", policy: &v1alpha1.PoolPolicy{
			MinPrefixLength: n(16), MaxPrefixLength: n(24), MaxRecordsPerClaim: n(2),
			Reservations: []v1alpha1.PoolReservation{{Prefix: "10.255.0.0/16"}}, ReuseGracePeriodSeconds: seconds(3600),
		}, want: "/16-/24, 2 per claim, 1 reserved, grace 1h"},
		// One bound: the other as the policy leaves it.
		{name: "shortest only", policy: &v1alpha1.PoolPolicy{MinPrefixLength: n(16)}, want: "/16-/32"},
		{name: "longest only", policy: &v1alpha1.PoolPolicy{MaxPrefixLength: n(24)}, want: "/9-/24"},
		{name: "IPv6, shortest only", policy: &v1alpha1.PoolPolicy{MinPrefixLength: n(48)}, pool: "v6", want: "/48-/128"},
		{name: "reservations", policy: &v1alpha1.PoolPolicy{Reservations: []v1alpha1.PoolReservation{{Prefix: "10.0.0.0/24"}, {Prefix: "10.0.1.0/24"}}}, want: "2 reserved"},
		{name: "no grace", policy: &v1alpha1.PoolPolicy{MaxRecordsPerClaim: n(1), ReuseGracePeriodSeconds: seconds(0)}, want: "1 per claim"},
		{name: "grace 90s", policy: &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: seconds(90)}, want: "grace 1m30s"},
		{name: "grace 1h30m", policy: &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: seconds(5400)}, want: "grace 1h30m"},
		{name: "grace 30m", policy: &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: seconds(1800)}, want: "grace 30m"},
		{name: "grace 30 days", policy: &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: seconds(30 * 24 * 3600)}, want: "grace 30d"},
		{name: "grace 36h", policy: &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: seconds(36 * 3600)}, want: "grace 36h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool := v4
			if tc.pool == "v6" {
				pool = v6
			}
			if got := policyString(tc.policy, pool); got != tc.want {
				t.Errorf("policyString = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTenantsString(t *testing.T) {
	tests := []struct {
		tenants []string
		want    string
	}{
		{nil, "<none>"},
		{[]string{"alpha"}, "alpha"},
		{[]string{"alpha", "beta", "gamma"}, "alpha,beta,gamma"},
		{[]string{"alpha", "beta", "gamma", "delta"}, "alpha,beta,gamma +1 more"},
		{[]string{"a", "b", "c", "d", "e", "f"}, "a,b,c +3 more"},
	}
	for _, tc := range tests {
		if got := tenantsString(tc.tenants); got != tc.want {
			t.Errorf("tenantsString(%q) = %q, want %q", tc.tenants, got, tc.want)
		}
	}
}

// storyReleasedAt is when beta released its prefixes in docs/networkclaim.md's
// Story 3.
var storyReleasedAt = time.Date(2026, 11, 23, 4, 18, 40, 0, time.UTC)

// storyClaims is the registry at the end of Story 3 in docs/networkclaim.md:
// org-pods' 10.0.0.0/8 with a policy, and fd00::/32 without; org-services;
// alpha, gamma and delta holding a pod /16, a pod /48 and a Service /20
// each; beta's pod /16 cooling for an hour after its release, its /48 and
// /20 reused at once by delta. The utilization is what the registry writes.
func storyClaims() []*v1alpha1.NetworkClaim {
	length := func(n int32) *int32 { return &n }
	allocated := func(c *v1alpha1.NetworkClaim, prefix string, from *v1alpha1.ClaimedPrefix, pool *v1alpha1.PoolStatus) {
		for _, r := range c.Spec.AddressSpace {
			c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{
				Name: r.Name, Prefix: prefix, Delegable: r.Delegable, Status: v1alpha1.AllocationAllocated,
				Date: registryDecidedAt, DelegatedFrom: from, Pool: pool,
			})
			return
		}
	}
	delegable := func(name string, records ...v1alpha1.AddressSpaceRecord) *v1alpha1.NetworkClaim {
		return &v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NetworkClaimSpec{AddressSpace: records}}
	}
	orgPods := delegable("org-pods",
		v1alpha1.AddressSpaceRecord{Prefix: "10.0.0.0/8", Delegable: true, Pool: &v1alpha1.PoolPolicy{
			MinPrefixLength: length(16), MaxPrefixLength: length(24), MaxRecordsPerClaim: length(2),
			Reservations:            []v1alpha1.PoolReservation{{Prefix: "10.255.0.0/16", Description: "infrastructure"}},
			ReuseGracePeriodSeconds: func() *int64 { s := int64(3600); return &s }(),
		}},
		v1alpha1.AddressSpaceRecord{Prefix: "fd00::/32", Delegable: true})
	orgPods.Status.AddressSpace = []v1alpha1.AddressSpaceStatus{
		{Prefix: "10.0.0.0/8", Delegable: true, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, Pool: &v1alpha1.PoolStatus{
			Addresses: "16777216", Allocated: "196608", Reserved: "65536", Cooling: "65536", Free: "16449536", UsedPercent: 1,
			LargestFreePrefix: "10.64.0.0/10", SubPrefixes: 3, Tenants: 3,
			CoolingPrefixes: []v1alpha1.CoolingPrefix{{Prefix: "10.1.0.0/16", Claim: "beta-pods-v4", ReusableAt: metav1.NewTime(storyReleasedAt.Add(time.Hour))}},
		}},
		{Prefix: "fd00::/32", Delegable: true, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, Pool: &v1alpha1.PoolStatus{
			Addresses: "79228162514264337593543950336", Allocated: "3626777458843887524118528", Reserved: "0", Cooling: "0",
			Free: "79224535736805493706019831808", LargestFreePrefix: "fd00:0:8000::/33", SubPrefixes: 3, Tenants: 3,
		}},
	}
	orgServices := delegable("org-services", v1alpha1.AddressSpaceRecord{Prefix: "172.16.0.0/12", Delegable: true})
	allocated(orgServices, "172.16.0.0/12", nil, &v1alpha1.PoolStatus{
		Addresses: "1048576", Allocated: "12288", Reserved: "0", Cooling: "0", Free: "1036288", UsedPercent: 1,
		LargestFreePrefix: "172.24.0.0/13", SubPrefixes: 3, Tenants: 3,
	})
	claims := []*v1alpha1.NetworkClaim{orgPods, orgServices}
	for _, cluster := range []struct {
		name                string
		podsV4, podsV6, svc string
	}{
		{"alpha", "10.0.0.0/16", "fd00::/48", "172.16.0.0/20"},
		{"gamma", "10.2.0.0/16", "fd00:0:2::/48", "172.16.32.0/20"},
		{"delta", "10.3.0.0/16", "fd00:0:1::/48", "172.16.16.0/20"},
	} {
		for _, r := range []struct {
			suffix, from, pool, prefix string
			length                     int32
		}{
			{"-pods-v4", "org-pods", "10.0.0.0/8", cluster.podsV4, 16},
			{"-pods-v6", "org-pods", "fd00::/32", cluster.podsV6, 48},
			{"-services", "org-services", "172.16.0.0/12", cluster.svc, 20},
		} {
			c := delegable(cluster.name+r.suffix, v1alpha1.AddressSpaceRecord{Name: r.from, From: &v1alpha1.PrefixSource{Claim: r.from}, PrefixLength: length(r.length)})
			allocated(c, r.prefix, &v1alpha1.ClaimedPrefix{Claim: r.from, Prefix: r.pool}, nil)
			claims = append(claims, c)
		}
	}
	return claims
}

func TestPrintPools(t *testing.T) {
	// A pool nearly full, with more tenants than the table names, and
	// nothing free at all; one whose utilization the registry has not
	// written yet.
	full := func() []*v1alpha1.NetworkClaim {
		lab := &v1alpha1.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "lab"},
			Spec: v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{
				{Prefix: "192.168.0.0/16", Delegable: true},
				{Prefix: "198.18.0.0/24", Delegable: true},
				{Prefix: "198.19.0.0/16", Delegable: true},
			}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{
				{Prefix: "192.168.0.0/16", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, Pool: &v1alpha1.PoolStatus{
					Addresses: "65536", Allocated: "53248", Reserved: "0", Cooling: "0", Free: "12288", UsedPercent: 81,
					LargestFreePrefix: "192.168.224.0/19", SubPrefixes: 13, Tenants: 5,
				}},
				{Prefix: "198.18.0.0/24", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, Pool: &v1alpha1.PoolStatus{
					Addresses: "256", Allocated: "256", Reserved: "0", Cooling: "0", Free: "0", UsedPercent: 100, SubPrefixes: 1, Tenants: 1,
				}},
				{Prefix: "198.19.0.0/16", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt},
			}},
		}
		claims := []*v1alpha1.NetworkClaim{lab}
		// Thirteen /20s from the bottom; five of them here.
		for i, name := range []string{"team-e", "team-a", "team-d", "team-b", "team-c"} {
			prefix := fmt.Sprintf("192.168.%d.0/20", 16*i)
			claims = append(claims, &v1alpha1.NetworkClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: prefix, From: &v1alpha1.PrefixSource{Claim: "lab"}}}},
				Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
					Prefix: prefix, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt,
					DelegatedFrom: &v1alpha1.ClaimedPrefix{Claim: "lab", Prefix: "192.168.0.0/16"},
				}}},
			})
		}
		claims = append(claims, &v1alpha1.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "bench"},
			Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: "198.18.0.0/25", From: &v1alpha1.PrefixSource{Claim: "lab"}}}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
				Prefix: "198.18.0.0/25", Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt,
				DelegatedFrom: &v1alpha1.ClaimedPrefix{Claim: "lab", Prefix: "198.18.0.0/24"},
			}}},
		})
		return claims
	}
	tests := []struct {
		name   string
		claims []*v1alpha1.NetworkClaim
		want   []string
	}{
		{name: "story 3", claims: storyClaims(), want: []string{
			"CLAIM          PREFIX          USED      ALLOCATED   RESERVED   FREE      LARGEST FREE       SUB-PREFIXES   TENANTS                                        POLICY",
			"org-pods       10.0.0.0/8      1%        196608      65536      16.4M     10.64.0.0/10       3              alpha-pods-v4,delta-pods-v4,gamma-pods-v4      /16-/24, 2 per claim, 1 reserved, grace 1h",
			"org-pods       fd00::/32       0%        3.63e24     0          7.92e28   fd00:0:8000::/33   3              alpha-pods-v6,delta-pods-v6,gamma-pods-v6      <none>",
			"org-services   172.16.0.0/12   1%        12288       0          1.04M     172.24.0.0/13      3              alpha-services,delta-services,gamma-services   <none>",
		}},
		{name: "full, and not written yet", claims: full(), want: []string{
			"CLAIM     PREFIX           USED      ALLOCATED   RESERVED   FREE      LARGEST FREE       SUB-PREFIXES   TENANTS                        POLICY",
			"lab       192.168.0.0/16   81%       53248       0          12288     192.168.224.0/19   13             team-a,team-b,team-c +2 more   <none>",
			"lab       198.18.0.0/24    100%      256         0          0         <none>             1              bench                          <none>",
			"lab       198.19.0.0/16    -         -           -          -         -                  -              <none>                         <none>",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printPools(&out, snapshot(t, tc.claims).Pools()); err != nil {
				t.Fatal(err)
			}
			if want := strings.Join(tc.want, "\n") + "\n"; out.String() != want {
				t.Errorf("pools table:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}

// -o json keeps the API's form: address counts as exact strings, the
// grace period in seconds.
func TestPrintPoolsJSON(t *testing.T) {
	tests := []struct {
		name  string
		pools []networkregistry.Pool
		want  string
	}{
		{name: "nothing", pools: nil, want: "[]"},
		{name: "story 3", pools: snapshot(t, storyClaims()).Pools()[:2], want: `[
		  {"claim": "org-pods", "prefix": "10.0.0.0/8",
		   "policy": {"minPrefixLength": 16, "maxPrefixLength": 24, "maxRecordsPerClaim": 2,
		              "reservations": [{"prefix": "10.255.0.0/16", "description": "infrastructure"}], "reuseGracePeriodSeconds": 3600},
		   "utilization": {"addresses": "16777216", "allocated": "196608", "reserved": "65536", "cooling": "65536", "free": "16449536",
		                   "usedPercent": 1, "largestFreePrefix": "10.64.0.0/10", "subPrefixes": 3, "tenants": 3,
		                   "coolingPrefixes": [{"prefix": "10.1.0.0/16", "claim": "beta-pods-v4", "reusableAt": "2026-11-23T05:18:40Z"}]},
		   "subPrefixes": [{"claim": "alpha-pods-v4", "prefix": "10.0.0.0/16"}, {"claim": "gamma-pods-v4", "prefix": "10.2.0.0/16"}, {"claim": "delta-pods-v4", "prefix": "10.3.0.0/16"}],
		   "tenants": ["alpha-pods-v4", "delta-pods-v4", "gamma-pods-v4"]},
		  {"claim": "org-pods", "prefix": "fd00::/32",
		   "utilization": {"addresses": "79228162514264337593543950336", "allocated": "3626777458843887524118528", "reserved": "0", "cooling": "0",
		                   "free": "79224535736805493706019831808", "usedPercent": 0, "largestFreePrefix": "fd00:0:8000::/33", "subPrefixes": 3, "tenants": 3},
		   "subPrefixes": [{"claim": "alpha-pods-v6", "prefix": "fd00::/48"}, {"claim": "delta-pods-v6", "prefix": "fd00:0:1::/48"}, {"claim": "gamma-pods-v6", "prefix": "fd00:0:2::/48"}],
		   "tenants": ["alpha-pods-v6", "delta-pods-v6", "gamma-pods-v6"]}
		]`},
		{name: "no tenants, utilization not written yet", pools: func() []networkregistry.Pool {
			services := storyClaims()[1]
			services.Status.AddressSpace[0].Pool = nil
			return snapshot(t, []*v1alpha1.NetworkClaim{services}).Pools()
		}(), want: `[{"claim": "org-services", "prefix": "172.16.0.0/12", "subPrefixes": [], "tenants": []}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printObject(&out, outputJSON, poolRecords(tc.pools)); err != nil {
				t.Fatal(err)
			}
			checkJSON(t, out.Bytes(), tc.want)
		})
	}
}
