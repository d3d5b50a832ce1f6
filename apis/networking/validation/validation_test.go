package validation

import (
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

func claim(records ...networking.AddressSpaceRecord) *networking.NetworkClaim {
	return &networking.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver"}, Spec: networking.NetworkClaimSpec{AddressSpace: records}}
}

func prefix(p string) networking.AddressSpaceRecord { return networking.AddressSpaceRecord{Prefix: p} }

// pool is a record taken from claim's pool.
func pool(name, claim string, length int32) networking.AddressSpaceRecord {
	return networking.AddressSpaceRecord{Name: name, From: &networking.PrefixSource{Claim: claim}, PrefixLength: &length}
}

// policy is a delegable record with a pool policy.
func policy(p string, pp networking.PoolPolicy) networking.AddressSpaceRecord {
	return networking.AddressSpaceRecord{Prefix: p, Delegable: true, Pool: &pp}
}

func withPool(r networking.AddressSpaceRecord, p string) networking.AddressSpaceRecord {
	r.From.Prefix = p
	return r
}

func TestValidateNetworkClaim(t *testing.T) {
	many := make([]networking.AddressSpaceRecord, MaxRecords+1)
	for i := range many {
		many[i] = prefix("10." + strconv.Itoa(i) + ".0.0/16")
	}
	for _, tc := range []struct {
		name  string
		claim *networking.NetworkClaim
		// wantField and wantMessage are substrings of the single expected error; empty: valid.
		wantField, wantMessage string
	}{
		{"ipv4", claim(prefix("10.96.0.0/12")), "", ""},
		{"ipv6", claim(prefix("fd00:10:96::/112")), "", ""},
		{"dual stack with reference and description", claim(
			networking.AddressSpaceRecord{Prefix: "10.96.0.0/12", Description: "Service ClusterIP range", Reference: &networking.ResourceReference{Resource: "services"}},
			networking.AddressSpaceRecord{Prefix: "fd00::/108", Reference: &networking.ResourceReference{Group: "networking.k8s.io", Resource: "servicecidrs"}},
		), "", ""},
		{"host bits set", claim(prefix("10.0.0.1/8")), "spec.addressSpace[0].prefix", "write 10.0.0.0/8"},
		{"ipv6 not in shortest form", claim(prefix("fd00:0:0::/64")), "spec.addressSpace[0].prefix", "write fd00::/64"},
		{"not a CIDR", claim(prefix("10.0.0.0")), "spec.addressSpace[0].prefix", "e.g. 10.96.0.0/12"},
		{"empty prefix", claim(prefix("")), "spec.addressSpace[0].prefix", "write a prefix such as 10.96.0.0/12, or prefixLength with from"},
		{"zone", claim(prefix("fe80::%eth0/64")), "spec.addressSpace[0].prefix", "must not have an IPv6 zone"},
		{"ipv4-mapped ipv6", claim(prefix("::ffff:10.0.0.0/104")), "spec.addressSpace[0].prefix", "write the IPv4 prefix, e.g. 10.0.0.0/8"},
		{"ipv4-mapped ipv6 of all of ::ffff:0:0/96", claim(prefix("::ffff:0.0.0.0/96")), "spec.addressSpace[0].prefix", "write the IPv4 prefix, e.g. 0.0.0.0/0"},
		// Not IPv4-mapped prefixes, but IPv6 ones in that notation: the
		// canonical form covers the same addresses, an IPv4 prefix would not.
		{"ipv6 /0 in ipv4-mapped notation", claim(prefix("::ffff:0.0.0.0/0")), "spec.addressSpace[0].prefix", "write ::/0"},
		{"ipv6 /95 in ipv4-mapped notation", claim(prefix("::ffff:10.0.0.0/95")), "spec.addressSpace[0].prefix", "write ::fffe:0:0/95"},
		{"overlapping records", claim(prefix("10.0.0.0/8"), prefix("10.96.0.0/12")), "spec.addressSpace[1].prefix", "overlaps 10.0.0.0/8 (addressSpace[0])"},
		{"duplicate records", claim(prefix("10.0.0.0/8"), prefix("10.0.0.0/8")), "spec.addressSpace[1].prefix", "Duplicate value"},
		{"no records", claim(), "spec.addressSpace", "claim at least one prefix"},
		{"too many records", claim(many...), "spec.addressSpace", "must have at most 64 items"},
		{"description too long", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Description: strings.Repeat("x", 256)}), "spec.addressSpace[0].description", "more than 255"},
		{"bad group", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Reference: &networking.ResourceReference{Group: "Not_A_Group", Resource: "services"}}), "spec.addressSpace[0].reference.group", "write \"\" for the core group"},
		{"bad resource", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Reference: &networking.ResourceReference{Resource: "Services.v1"}}), "spec.addressSpace[0].reference.resource", "plural resource name"},
		{"delegable", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Delegable: true}), "", ""},
		{"from a pool", claim(pool("pods-v4", "org-pods", 16), pool("pods-v6", "org-pods", 48)), "", ""},
		{"from a named pool", claim(withPool(pool("pods", "org-pods", 16), "10.0.0.0/8")), "", ""},
		{"delegable from a pool", claim(func() networking.AddressSpaceRecord { r := pool("rir", "iana", 12); r.Delegable = true; return r }()), "", ""},
		{"sub-prefix taken from a claim", claim(networking.AddressSpaceRecord{Prefix: "10.5.0.0/16", From: &networking.PrefixSource{Claim: "org-pods", Prefix: "10.0.0.0/8"}}), "", ""},
		{"named exact record", claim(networking.AddressSpaceRecord{Name: "services", Prefix: "10.96.0.0/12"}), "", ""},
		{"pool without name", claim(pool("", "org-pods", 16)), "spec.addressSpace[0].name", "name a record taken from a pool"},
		{"pool without from", claim(networking.AddressSpaceRecord{Name: "pods", PrefixLength: ptr(int32(16))}), "spec.addressSpace[0].from", "name the claim to take the prefix from"},
		{"prefix and prefixLength", claim(networking.AddressSpaceRecord{Name: "pods", Prefix: "10.0.0.0/16", PrefixLength: ptr(int32(16)), From: &networking.PrefixSource{Claim: "org"}}), "spec.addressSpace[0].prefixLength", "not both"},
		{"prefixLength out of range", claim(pool("pods", "org", 129)), "spec.addressSpace[0].prefixLength", "1 to 128"},
		{"prefixLength shorter than the pool", claim(withPool(pool("pods", "org", 4), "10.0.0.0/8")), "spec.addressSpace[0].prefixLength", "must fit strictly inside the pool 10.0.0.0/8: write 9 to 32"},
		{"ipv4 pool, ipv6 length", claim(withPool(pool("pods", "org", 48), "10.0.0.0/8")), "spec.addressSpace[0].prefixLength", "write 9 to 32"},
		{"sub-prefix outside from.prefix", claim(networking.AddressSpaceRecord{Prefix: "11.0.0.0/16", From: &networking.PrefixSource{Claim: "org", Prefix: "10.0.0.0/8"}}), "spec.addressSpace[0].prefix", "must lie strictly inside from.prefix 10.0.0.0/8"},
		{"from itself", claim(pool("pods", "kube-apiserver", 16)), "spec.addressSpace[0].from.claim", "must name another claim"},
		{"from without claim", claim(pool("pods", "", 16)), "spec.addressSpace[0].from.claim", "Required value"},
		{"from a bad claim name", claim(pool("pods", "Org_Pods", 16)), "spec.addressSpace[0].from.claim", "write a NetworkClaim's name"},
		{"pool policy", claim(policy("10.0.0.0/8", networking.PoolPolicy{MinPrefixLength: ptr(int32(16)), MaxPrefixLength: ptr(int32(24)), MaxRecordsPerClaim: ptr(int32(2)), ReuseGracePeriodSeconds: ptr(int64(3600)),
			Reservations: []networking.PoolReservation{{Prefix: "10.0.0.0/24", Description: "gateways"}, {Prefix: "10.255.0.0/16"}}})), "", ""},
		{"pool policy on an ipv6 pool record", claim(func() networking.AddressSpaceRecord {
			r := pool("block", "iana", 32)
			r.Delegable, r.Pool = true, &networking.PoolPolicy{MinPrefixLength: ptr(int32(48)), MaxPrefixLength: ptr(int32(64))}
			return r
		}()), "", ""},
		{"pool policy without delegable", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Pool: &networking.PoolPolicy{}}), "spec.addressSpace[0].pool", "add delegable: true, or remove pool"},
		{"minPrefixLength not longer than the pool", claim(policy("10.0.0.0/8", networking.PoolPolicy{MinPrefixLength: ptr(int32(8))})), "spec.addressSpace[0].pool.minPrefixLength", "write 9 to 32"},
		{"maxPrefixLength past the family", claim(policy("fd00::/32", networking.PoolPolicy{MaxPrefixLength: ptr(int32(129))})), "spec.addressSpace[0].pool.maxPrefixLength", "write 33 to 128"},
		{"maxPrefixLength shorter than minPrefixLength", claim(policy("10.0.0.0/8", networking.PoolPolicy{MinPrefixLength: ptr(int32(24)), MaxPrefixLength: ptr(int32(16))})), "spec.addressSpace[0].pool.maxPrefixLength", "write 24 or more"},
		{"maxRecordsPerClaim zero", claim(policy("10.0.0.0/8", networking.PoolPolicy{MaxRecordsPerClaim: ptr(int32(0))})), "spec.addressSpace[0].pool.maxRecordsPerClaim", "must be 1 to 64"},
		{"negative grace period", claim(policy("10.0.0.0/8", networking.PoolPolicy{ReuseGracePeriodSeconds: ptr(int64(-1))})), "spec.addressSpace[0].pool.reuseGracePeriodSeconds", "must be 0 to 2592000"},
		{"reservation outside the pool", claim(policy("10.0.0.0/8", networking.PoolPolicy{Reservations: []networking.PoolReservation{{Prefix: "11.0.0.0/24"}}})), "spec.addressSpace[0].pool.reservations[0].prefix", "must lie strictly inside the record's prefix 10.0.0.0/8: write a sub-prefix of it, e.g. 10.0.0.0/16"},
		{"reservation of the whole pool", claim(policy("10.0.0.0/8", networking.PoolPolicy{Reservations: []networking.PoolReservation{{Prefix: "10.0.0.0/8"}}})), "spec.addressSpace[0].pool.reservations[0].prefix", "must lie strictly inside"},
		{"reservation not canonical", claim(policy("10.0.0.0/8", networking.PoolPolicy{Reservations: []networking.PoolReservation{{Prefix: "10.0.0.1/24"}}})), "spec.addressSpace[0].pool.reservations[0].prefix", "write 10.0.0.0/24"},
		{"overlapping reservations", claim(policy("10.0.0.0/8", networking.PoolPolicy{Reservations: []networking.PoolReservation{{Prefix: "10.0.0.0/16"}, {Prefix: "10.0.1.0/24"}}})), "spec.addressSpace[0].pool.reservations[1].prefix", "overlaps reservations[0] 10.0.0.0/16"},
		{"reservations on a pool record", claim(func() networking.AddressSpaceRecord {
			r := pool("block", "iana", 12)
			r.Delegable, r.Pool = true, &networking.PoolPolicy{Reservations: []networking.PoolReservation{{Prefix: "10.0.0.0/24"}}}
			return r
		}()), "spec.addressSpace[0].pool.reservations[0].prefix", "reserve ranges on a record that names its prefix"},
		{"from a bad pool prefix", claim(withPool(pool("pods", "org", 16), "10.0.0.1/8")), "spec.addressSpace[0].from.prefix", "write 10.0.0.0/8"},
		{"duplicate names", claim(pool("pods", "org", 16), pool("pods", "org", 24)), "spec.addressSpace[1].name", "is also the name of addressSpace[0]"},
		{"bad name", claim(pool("Pods_V4", "org", 16)), "spec.addressSpace[0].name", "write a short name such as pods-v4"},
		{"neither prefix nor prefixLength", claim(networking.AddressSpaceRecord{Name: "pods"}), "spec.addressSpace[0].prefix", "or prefixLength with from"},
		{"missing resource", claim(networking.AddressSpaceRecord{Prefix: "10.0.0.0/8", Reference: &networking.ResourceReference{Group: "example.com"}}), "spec.addressSpace[0].reference.resource", "Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateNetworkClaim(tc.claim)
			if tc.wantField == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs.ToAggregate())
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error on %s, got %d: %v", tc.wantField, len(errs), errs.ToAggregate())
			}
			if errs[0].Field != tc.wantField || !strings.Contains(errs[0].Error(), tc.wantMessage) {
				t.Fatalf("got %q, want an error on %s containing %q", errs[0].Error(), tc.wantField, tc.wantMessage)
			}
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	old := claim(prefix("10.0.0.0/8"))
	old.ResourceVersion = "1"
	for _, tc := range []struct {
		name    string
		status  networking.NetworkClaimStatus
		wantErr string
	}{
		{"allocated", networking.NetworkClaimStatus{ObservedGeneration: 1, AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated}}}, ""},
		{"unavailable without message", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationUnavailable}}}, "status.addressSpace[0].message"},
		{"unknown status", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: "Maybe"}}}, "status.addressSpace[0].status"},
		{"pool record waiting", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Name: "pods", Status: networking.AllocationUnavailable, Reason: networking.ReasonPoolExhausted, Message: "no free /16"}}}, ""},
		{"pool record allocated without prefix", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Name: "pods", Status: networking.AllocationAllocated}}}, "status.addressSpace[0].prefix"},
		{"record without name or prefix", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Status: networking.AllocationUnavailable, Message: "x"}}}, "status.addressSpace[0].prefix"},
		{"duplicate records", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated}, {Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated}}}, "status.addressSpace[1]"},
		{"duplicate named records", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Name: "pods", Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated}, {Name: "pods", Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated}}}, `status.addressSpace[1]: Duplicate value: "pods 10.0.0.0/8"`},
		{"unknown reason", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationUnavailable, Reason: "Busy", Message: "x"}}}, "status.addressSpace[0].reason"},
		{"conflict without prefix", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationUnavailable, Reason: networking.ReasonConflict, Message: "x", ConflictsWith: &networking.ClaimedPrefix{Claim: "a"}}}}, "status.addressSpace[0].conflictsWith.prefix"},
		{"bad resource version", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated, FirstSeenResourceVersion: "007"}}}, "status.addressSpace[0].firstSeenResourceVersion"},
		{"negative generation", networking.NetworkClaimStatus{ObservedGeneration: -1}, "status.observedGeneration"},
		{"pool utilization count negative", poolStatus(networking.PoolStatus{Addresses: "16777216", Allocated: "0", Reserved: "0", Cooling: "0", Free: "-1"}), "status.addressSpace[0].pool.free"},
		{"pool utilization of ipv6", poolStatus(networking.PoolStatus{Addresses: "79228162514264337593543950336", Allocated: "1208925819614629174706176", Reserved: "0", Cooling: "0", Free: "79226953588444722964369244160", UsedPercent: 0, LargestFreePrefix: "fd00:0:8000::/33", SubPrefixes: 1, Tenants: 1,
			CoolingPrefixes: []networking.CoolingPrefix{{Prefix: "fd00:0:1::/48", Claim: "beta", ReusableAt: metav1.NewTime(time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC))}}}), ""},
		{"pool count not a number", poolStatus(networking.PoolStatus{Addresses: "2^96", Allocated: "0", Reserved: "0", Cooling: "0", Free: "0"}), "status.addressSpace[0].pool.addresses"},
		{"pool percent past 100", poolStatus(networking.PoolStatus{Addresses: "1", Allocated: "0", Reserved: "0", Cooling: "0", Free: "1", UsedPercent: 101}), "status.addressSpace[0].pool.usedPercent"},
		{"cooling prefix without claim", poolStatus(networking.PoolStatus{Addresses: "1", Allocated: "0", Reserved: "0", Cooling: "0", Free: "1", CoolingPrefixes: []networking.CoolingPrefix{{Prefix: "10.0.0.0/24"}}}), "status.addressSpace[0].pool.coolingPrefixes[0].claim"},
		{"new reasons", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{
			{Prefix: "10.0.0.0/8", Status: networking.AllocationUnavailable, Reason: networking.ReasonPoolPolicy, Message: "x"},
			{Prefix: "11.0.0.0/8", Status: networking.AllocationUnavailable, Reason: networking.ReasonReuseGracePeriod, Message: "x"}}}, ""},
		// Stored as 10000-01-01T22:59:59Z, which no read of the claim
		// would parse again.
		{"date past 9999 in UTC", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated, Date: metav1.NewTime(time.Date(9999, time.December, 31, 23, 59, 59, 0, time.FixedZone("", -23*3600)))}}},
			`status.addressSpace[0].date: Invalid value: "9999-12-31T23:59:59-23:00": must lie between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC`},
		{"date before year 0 in UTC", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated, Date: metav1.NewTime(time.Date(0, time.January, 1, 0, 0, 0, 0, time.FixedZone("", 3600)))}}},
			"status.addressSpace[0].date"},
		{"last date of 9999", networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "10.0.0.0/8", Status: networking.AllocationAllocated, Date: metav1.NewTime(time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC))}}}, ""},
		{"condition past 9999 in UTC", networking.NetworkClaimStatus{Conditions: []metav1.Condition{{Type: networking.ConditionReady, Status: metav1.ConditionTrue, Reason: networking.ReasonAllocated, LastTransitionTime: metav1.NewTime(time.Date(9999, time.December, 31, 23, 0, 0, 0, time.FixedZone("", -3600)))}}},
			"status.conditions[0].lastTransitionTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := old.DeepCopy()
			updated.Status = tc.status
			errs := ValidateNetworkClaimStatusUpdate(updated, old)
			if tc.wantErr == "" && len(errs) > 0 || tc.wantErr != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr)) {
				t.Fatalf("errors %v, want one on %q", errs.ToAggregate(), tc.wantErr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// poolStatus is the status of an allocated delegable record with pool.
func poolStatus(pool networking.PoolStatus) networking.NetworkClaimStatus {
	return networking.NetworkClaimStatus{AddressSpace: []networking.AddressSpaceStatus{{Prefix: "fd00::/32", Delegable: true, Status: networking.AllocationAllocated, Pool: &pool}}}
}
