package allocation

import (
	"math/big"
	"math/bits"
	"net/netip"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// poolUsage is how full a pool is. Every address of the pool is in one of
// four states, the first that applies: allocated (to a record inside it),
// reserved, cooling, free.
type poolUsage struct {
	size, allocated, reserved, cooling, free *big.Int
	// largestFree is the largest free block, the lowest of the largest.
	largestFree netip.Prefix
	subPrefixes int
	tenants     int

	// countedAt is when it was counted, cost how long that took; stale
	// says the pool changed since.
	countedAt time.Time
	cost      time.Duration
	stale     bool
}

// countBudget is the share of the controller's time that counting one
// pool may take: a pool whose count takes 10 ms is counted at most every
// second, one whose count takes 50 ms (a million sub-prefixes) every 5 s.
// The count holds the ledger, so decisions wait for it.
const countBudget = 100

// refreshAfter is how long after its last count a changed pool is counted
// again.
func (u *poolUsage) refreshAfter() time.Duration {
	return max(poolStatusDelay, countBudget*u.cost)
}

// usedPercent is the part of the pool that is not free, in percent
// rounded down.
func (u *poolUsage) usedPercent() int {
	used := new(big.Int).Sub(u.size, u.free)
	used.Mul(used, big.NewInt(100))
	return int(used.Quo(used, u.size).Int64())
}

// poolChanged marks a pool's cached usage stale, and notes that its
// claim's status must show the new one.
func (l *ledger) poolChanged(pool *record) {
	if u, ok := l.usage[pool]; ok {
		u.stale = true
	}
	l.changedPools[pool.claim] = true
}

// poolsAround notes a change inside the pools that contain p.
func (l *ledger) poolsAround(p netip.Prefix) {
	for q, h := range l.held.Overlapping(p) {
		if q.Bits() >= p.Bits() {
			break
		}
		if h.req.delegable {
			l.poolChanged(h)
		}
	}
}

// takeChangedPools returns the claims whose pools changed since the last
// call.
func (l *ledger) takeChangedPools() []string {
	if len(l.changedPools) == 0 {
		return nil
	}
	out := sets.List(sets.KeySet(l.changedPools))
	clear(l.changedPools)
	return out
}

// usageOf returns how full an allocated pool is: counted (one walk of the
// allocations inside it) when it has not been, or when it changed and its
// count's budget allows another; else as last counted, maybe stale.
func (l *ledger) usageOf(pool *record) *poolUsage {
	u, ok := l.usage[pool]
	if ok && (!u.stale || time.Since(u.countedAt) < u.refreshAfter()) {
		return u
	}
	start := time.Now()
	u = l.countUsage(pool)
	u.countedAt, u.cost = start, time.Since(start)
	l.usage[pool] = u
	return u
}

// staleUsage returns, for a claim whose status shows a stale count of one
// of its pools, how long until that pool may be counted again.
func (l *ledger) staleUsage(claim string) (time.Duration, bool) {
	e, ok := l.claims[claim]
	if !ok {
		return 0, false
	}
	var wait time.Duration
	stale := false
	for _, r := range e.records {
		if u, ok := l.usage[r]; ok && u.stale {
			stale = true
			wait = max(wait, u.refreshAfter()-time.Since(u.countedAt))
		}
	}
	return max(wait, 0), stale
}

// refreshDelay is how long after a change a claim's status is written for
// its pools' usage: a second, or longer for a pool whose count is costly.
func (l *ledger) refreshDelay(claim string) time.Duration {
	delay := poolStatusDelay
	if e, ok := l.claims[claim]; ok {
		for _, r := range e.records {
			if u, ok := l.usage[r]; ok {
				delay = max(delay, u.refreshAfter()-time.Since(u.countedAt))
			}
		}
	}
	return delay
}

// State of an address, by precedence.
const (
	stateCooling = iota + 1
	stateReserved
	stateAllocated
)

// span is a prefix inside a pool in one state.
type span struct {
	prefix netip.Prefix
	state  int
}

// countUsage counts a pool's addresses by state. Prefixes inside a pool are
// nested or disjoint, so in CIDR order they form a forest: each address
// takes the highest state of the spans around it, and a span's own
// addresses are its size less its children's. It runs under the
// controller's lock, once a second at most for a pool that keeps changing,
// so it allocates nothing per span.
func (l *ledger) countUsage(pool *record) *poolUsage {
	p := pool.prefix
	spans := l.spans[:0]
	// A map kept between counts: a new one would grow, rehashing, to a
	// pool's number of tenants at every count, which was most of its cost
	// (a /8 with 50,000 /24s of as many claims).
	if l.tenants == nil {
		l.tenants = map[string]struct{}{}
	}
	tenants := l.tenants
	clear(tenants)
	u := &poolUsage{}
	for q, h := range l.held.Overlapping(p) {
		if q.Bits() <= p.Bits() {
			continue // the pool and its chain
		}
		spans = append(spans, span{q, stateAllocated})
		if isChildOf(h, pool) {
			u.subPrefixes++
			tenants[h.claim] = struct{}{}
		}
	}
	u.tenants = len(tenants)
	clear(tenants)
	extra := len(spans)
	if pool.policy != nil {
		for _, r := range pool.policy.reserved {
			spans = append(spans, span{r, stateReserved})
		}
	}
	for _, c := range l.cooling[pool] {
		spans = append(spans, span{c.prefix, stateCooling})
	}
	if len(spans) > extra {
		slices.SortStableFunc(spans, func(a, b span) int { return comparePrefixes(a.prefix, b.prefix) })
	}
	l.spans = spans[:0]
	var byState [stateAllocated + 1]addrCount
	// stack is the chain of spans around the current one: each with its
	// effective state and the addresses its children took.
	type open struct {
		prefix   netip.Prefix
		state    int
		children addrCount
	}
	stack := make([]open, 0, 8)
	closeTop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		size := sizeOf(top.prefix)
		byState[top.state] = byState[top.state].add(size.sub(top.children))
		if len(stack) > 0 {
			stack[len(stack)-1].children = stack[len(stack)-1].children.add(size)
		}
	}
	// Free space lies between the top-level spans.
	cursor, last := p.Addr(), lastAddr(p)
	for _, s := range spans {
		for len(stack) > 0 && !stack[len(stack)-1].prefix.Contains(s.prefix.Addr()) {
			closeTop()
		}
		state := s.state
		if len(stack) > 0 {
			state = max(state, stack[len(stack)-1].state)
		} else {
			if cursor.IsValid() && cursor.Less(s.prefix.Addr()) {
				u.largestFree = largerFree(u.largestFree, cursor, s.prefix.Addr())
			}
			cursor = lastAddr(s.prefix).Next() // invalid past the family's end
		}
		stack = append(stack, open{prefix: s.prefix, state: state})
	}
	for len(stack) > 0 {
		closeTop()
	}
	if cursor.IsValid() && !last.Less(cursor) {
		u.largestFree = largerFree(u.largestFree, cursor, last.Next())
	}
	size := sizeOf(p)
	free := size.sub(byState[stateAllocated]).sub(byState[stateReserved]).sub(byState[stateCooling])
	u.size, u.free = size.big(), free.big()
	u.allocated, u.reserved, u.cooling = byState[stateAllocated].big(), byState[stateReserved].big(), byState[stateCooling].big()
	return u
}

// addrCount is a number of addresses: up to 2^128, the size of ::/0, so
// three words.
type addrCount [3]uint64

// sizeOf is the number of addresses of p.
func sizeOf(p netip.Prefix) addrCount {
	var c addrCount
	n := p.Addr().BitLen() - p.Bits()
	c[n/64] = 1 << (n % 64)
	return c
}

func (a addrCount) add(b addrCount) addrCount {
	var carry uint64
	a[0], carry = bits.Add64(a[0], b[0], 0)
	a[1], carry = bits.Add64(a[1], b[1], carry)
	a[2], _ = bits.Add64(a[2], b[2], carry)
	return a
}

func (a addrCount) sub(b addrCount) addrCount {
	var borrow uint64
	a[0], borrow = bits.Sub64(a[0], b[0], 0)
	a[1], borrow = bits.Sub64(a[1], b[1], borrow)
	a[2], _ = bits.Sub64(a[2], b[2], borrow)
	return a
}

func (a addrCount) big() *big.Int {
	out := new(big.Int).SetUint64(a[2])
	for _, w := range []uint64{a[1], a[0]} {
		out.Lsh(out, 64).Or(out, new(big.Int).SetUint64(w))
	}
	return out
}

// largerFree returns the larger of best and the largest CIDR block in
// [from, to), to invalid meaning the family's end; the lower one wins a tie.
func largerFree(best netip.Prefix, from, to netip.Addr) netip.Prefix {
	for from.IsValid() && (!to.IsValid() || from.Less(to)) {
		// The largest block that starts at from and ends before to.
		bits := from.BitLen()
		for bits > 0 {
			wider := netip.PrefixFrom(from, bits-1)
			if wider.Masked().Addr() != from || (to.IsValid() && !lastAddr(wider).Less(to)) {
				break
			}
			bits--
		}
		block := netip.PrefixFrom(from, bits)
		if !best.IsValid() || block.Bits() < best.Bits() {
			best = block
		}
		from = lastAddr(block).Next()
	}
	return best
}

// poolStatus renders a pool's usage and cooling list for its status.
func poolStatus(u *poolUsage, list []cooled) *networkingv1alpha1.PoolStatus {
	s := &networkingv1alpha1.PoolStatus{
		Addresses:       u.size.String(),
		Allocated:       u.allocated.String(),
		Reserved:        u.reserved.String(),
		Cooling:         u.cooling.String(),
		Free:            u.free.String(),
		UsedPercent:     int32(u.usedPercent()),
		SubPrefixes:     int32(u.subPrefixes),
		Tenants:         int32(u.tenants),
		CoolingPrefixes: coolingStatus(list),
	}
	if u.largestFree.IsValid() {
		s.LargestFreePrefix = u.largestFree.String()
	}
	return s
}

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t) }
