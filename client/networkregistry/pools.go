package networkregistry

import (
	"math/big"
	"net/netip"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// Pool is an allocated delegable prefix, which other claims take
// sub-prefixes of: its allocation, its policy, how full the registry says it
// is, and who holds what was taken from it.
type Pool struct {
	// Allocation is the delegable allocation itself: its claim, record
	// name, prefix, reference and description.
	Allocation
	// Policy is the delegable record's pool policy, from its spec; nil
	// for none.
	Policy *PoolPolicy
	// Utilization is how full the pool is, as the registry last wrote it
	// in the record's status; nil until it has (a registry that has not
	// caught up with the allocation yet, or a server older than pool
	// utilization).
	Utilization *PoolUtilization
	// SubPrefixes are the allocations taken from the pool directly (their
	// DelegatedFrom is this pool), in prefix order, then by claim name.
	// Records taken from them in turn are theirs, not the pool's.
	SubPrefixes []Allocation
	// Tenants are the names of the claims that hold SubPrefixes, sorted,
	// each once.
	//
	// SubPrefixes and Tenants are this Registry's view, from its claims;
	// Utilization's counts are the registry's (the allocator's), written
	// in status. Both agree once both have caught up.
	Tenants []string
}

// PoolUtilization is a pool's status.addressSpace[i].pool with numbers
// parsed. Address counts are *big.Int because an IPv6 pool holds more
// addresses than 64 bits count: a /32 holds 2^96. An IPv4 pool holds at
// most 2^32, so its counts always fit in a uint64 (big.Int.IsUint64).
// Allocated, Reserved, Cooling and Free add up to Size.
type PoolUtilization struct {
	// Size is the number of addresses of the pool's prefix.
	Size *big.Int
	// Allocated counts the addresses of the allocations inside the pool.
	Allocated *big.Int
	// Reserved counts the addresses of its reservations not allocated.
	Reserved *big.Int
	// Cooling counts the addresses of released sub-prefixes in their reuse
	// grace period, neither allocated nor reserved.
	Cooling *big.Int
	// Free counts the addresses that first fit may hand out.
	Free *big.Int
	// UsedPercent is (Size - Free) / Size in percent, rounded down: 0 to
	// 100.
	UsedPercent int
	// LargestFreePrefix is the largest free block, the lowest of those as
	// large; zero when nothing is free.
	LargestFreePrefix netip.Prefix
	// SubPrefixes counts the allocated records taken from the pool, and
	// Tenants the claims that hold them.
	SubPrefixes, Tenants int
	// CoolingPrefixes are the released sub-prefixes in their reuse grace
	// period, soonest reusable first.
	CoolingPrefixes []CoolingPrefix
}

// CoolingPrefix is a released sub-prefix in its pool's reuse grace period.
type CoolingPrefix struct {
	// Prefix is the released sub-prefix.
	Prefix netip.Prefix
	// Claim is the NetworkClaim that released it, the one claim that may
	// take it again before ReusableAt.
	Claim string
	// ReusableAt is when another claim may be given it.
	ReusableAt time.Time
}

// Pools returns every allocated delegable prefix with its policy,
// utilization and tenants, by claim name, then in prefix order (IPv4 first,
// then CIDR order). It returns nothing before Start returned nil.
func (r *Registry) Pools() []Pool {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Pool
	for name := range r.poolHolders {
		for _, pool := range poolsOf(r.claims[name]) {
			out = append(out, r.withSubPrefixes(pool))
		}
	}
	slices.SortFunc(out, func(a, b Pool) int {
		if c := strings.Compare(a.Claim, b.Claim); c != 0 {
			return c
		}
		return a.Prefix.Compare(b.Prefix)
	})
	return out
}

// Pool returns the pool that the claim's allocated delegable prefix is;
// ok is false when the claim holds no such allocation (or before Start
// returned nil).
func (r *Registry) Pool(claim string, prefix netip.Prefix) (pool Pool, ok bool) {
	if !r.synced.Load() {
		return Pool{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if a, held := r.allocations[claim][prefix.Masked()]; !held || !a.Delegable {
		return Pool{}, false
	}
	for _, p := range poolsOf(r.claims[claim]) {
		if p.Prefix == prefix.Masked() {
			return r.withSubPrefixes(p), true
		}
	}
	return Pool{}, false
}

// poolsOf returns the claim's allocated delegable records as pools, in spec
// order, without their sub-prefixes.
func poolsOf(claim *v1alpha1.NetworkClaim) []Pool {
	var out []Pool
	for _, d := range Decisions(claim) {
		p, ok := d.Allocated()
		if !ok || !d.Record.Delegable {
			continue
		}
		a := Allocation{
			Claim: claim.Name, Name: d.Record.Name, Prefix: p,
			Reference: d.Record.Reference.DeepCopy(), Description: d.Record.Description, Delegable: true,
			Date: d.Status.Date.Time,
		}
		if from := d.Status.DelegatedFrom; from != nil {
			if parent, err := netip.ParsePrefix(from.Prefix); err == nil {
				a.DelegatedFrom = &ClaimedPrefix{Claim: from.Claim, Prefix: parent.Masked()}
			}
		}
		out = append(out, Pool{Allocation: a, Policy: policyOf(d.Record.Pool), Utilization: utilizationOf(d.Status.Pool)})
	}
	return out
}

// withSubPrefixes sets the pool's sub-prefixes, copied and sorted, and its
// tenants; r.mu must be held. Sub-prefixes lie inside their pool: the index
// finds them, in CIDR order, without a walk through every claim.
func (r *Registry) withSubPrefixes(pool Pool) Pool {
	for q, holder := range r.index.Overlapping(pool.Prefix) {
		a := r.allocations[holder][q]
		if from := a.DelegatedFrom; from != nil && from.Claim == pool.Claim && from.Prefix == pool.Prefix {
			pool.SubPrefixes = append(pool.SubPrefixes, a.clone())
			pool.Tenants = append(pool.Tenants, a.Claim)
		}
	}
	// Holders of one prefix come in the order they were indexed.
	sortAllocations(pool.SubPrefixes)
	slices.Sort(pool.Tenants)
	pool.Tenants = slices.Compact(pool.Tenants)
	return pool
}

// policyOf is the library's form of a record's pool policy.
func policyOf(policy *v1alpha1.PoolPolicy) *PoolPolicy {
	if policy == nil {
		return nil
	}
	out := &PoolPolicy{
		MinPrefixLength:    intOf(policy.MinPrefixLength),
		MaxPrefixLength:    intOf(policy.MaxPrefixLength),
		MaxRecordsPerClaim: intOf(policy.MaxRecordsPerClaim),
	}
	if n := policy.ReuseGracePeriodSeconds; n != nil {
		out.ReuseGracePeriod = time.Duration(*n) * time.Second
	}
	for _, r := range policy.Reservations {
		// Validation admits only canonical prefixes; were one not, it is
		// kept as the zero prefix rather than dropped, so that the count
		// of reservations stays true.
		p, _ := netip.ParsePrefix(r.Prefix)
		out.Reservations = append(out.Reservations, Reservation{Prefix: p, Description: r.Description})
	}
	return out
}

func intOf(n *int32) int {
	if n == nil {
		return 0
	}
	return int(*n)
}

// utilizationOf parses a pool status; nil when there is none, or when its
// counts are not decimal numbers (validation admits no other).
func utilizationOf(status *v1alpha1.PoolStatus) *PoolUtilization {
	if status == nil {
		return nil
	}
	out := &PoolUtilization{
		UsedPercent: int(status.UsedPercent),
		SubPrefixes: int(status.SubPrefixes),
		Tenants:     int(status.Tenants),
	}
	for _, c := range []struct {
		to    **big.Int
		value string
	}{
		{&out.Size, status.Addresses}, {&out.Allocated, status.Allocated}, {&out.Reserved, status.Reserved},
		{&out.Cooling, status.Cooling}, {&out.Free, status.Free},
	} {
		n, ok := new(big.Int).SetString(c.value, 10)
		if !ok {
			return nil
		}
		*c.to = n
	}
	if p, err := netip.ParsePrefix(status.LargestFreePrefix); err == nil {
		out.LargestFreePrefix = p.Masked()
	}
	for _, c := range status.CoolingPrefixes {
		p, err := netip.ParsePrefix(c.Prefix)
		if err != nil {
			continue
		}
		out.CoolingPrefixes = append(out.CoolingPrefixes, CoolingPrefix{Prefix: p.Masked(), Claim: c.Claim, ReusableAt: c.ReusableAt.Time})
	}
	return out
}

// holdsPool reports whether a claim's allocations include a delegable one.
func holdsPool(allocations map[netip.Prefix]Allocation) bool {
	for _, a := range allocations {
		if a.Delegable {
			return true
		}
	}
	return false
}
