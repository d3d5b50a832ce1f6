package allocation

import (
	"math/big"
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
}

// usedPercent is the part of the pool that is not free, in percent
// rounded down.
func (u *poolUsage) usedPercent() int {
	used := new(big.Int).Sub(u.size, u.free)
	used.Mul(used, big.NewInt(100))
	return int(used.Quo(used, u.size).Int64())
}

// poolChanged drops a pool's cached usage, and notes that its claim's
// status must show the new one.
func (l *ledger) poolChanged(pool *record) {
	delete(l.usage, pool)
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

// usageOf returns how full an allocated pool is, from the cache or
// counted: one walk of the allocations inside it.
func (l *ledger) usageOf(pool *record) *poolUsage {
	if u, ok := l.usage[pool]; ok {
		return u
	}
	u := l.countUsage(pool)
	l.usage[pool] = u
	return u
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
// addresses are its size less its children's.
func (l *ledger) countUsage(pool *record) *poolUsage {
	p := pool.prefix
	var spans []span
	tenants := sets.New[string]()
	u := &poolUsage{size: blockSize(p), allocated: new(big.Int), reserved: new(big.Int), cooling: new(big.Int)}
	for q, h := range l.held.Overlapping(p) {
		if q.Bits() <= p.Bits() {
			continue // the pool and its chain
		}
		spans = append(spans, span{q, stateAllocated})
		if isChildOf(h, pool) {
			u.subPrefixes++
			tenants.Insert(h.claim)
		}
	}
	u.tenants = tenants.Len()
	var extra []span
	if pool.policy != nil {
		for _, r := range pool.policy.reserved {
			extra = append(extra, span{r, stateReserved})
		}
	}
	for _, c := range l.cooling[pool] {
		extra = append(extra, span{c.prefix, stateCooling})
	}
	if len(extra) > 0 {
		spans = append(spans, extra...)
		slices.SortStableFunc(spans, func(a, b span) int { return comparePrefixes(a.prefix, b.prefix) })
	}
	byState := map[int]*big.Int{stateAllocated: u.allocated, stateReserved: u.reserved, stateCooling: u.cooling}
	// open is the chain of spans around the current one: each with its
	// effective state and the addresses its children took.
	type open struct {
		span
		state    int
		children *big.Int
	}
	var stack []open
	closeTop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		own := blockSize(top.prefix)
		size := new(big.Int).Set(own)
		own.Sub(own, top.children)
		byState[top.state].Add(byState[top.state], own)
		if len(stack) > 0 {
			parent := &stack[len(stack)-1]
			parent.children.Add(parent.children, size)
		}
	}
	// Free space lies between the top-level spans.
	cursor, last := p.Addr(), lastAddr(p)
	gap := func(end netip.Addr) { // the free addresses from cursor up to end, excluded
		u.largestFree = largerFree(u.largestFree, cursor, end)
	}
	for _, s := range spans {
		for len(stack) > 0 && !stack[len(stack)-1].prefix.Contains(s.prefix.Addr()) {
			closeTop()
		}
		state := s.state
		if len(stack) > 0 {
			state = max(state, stack[len(stack)-1].state)
		} else {
			if cursor.Less(s.prefix.Addr()) {
				gap(s.prefix.Addr())
			}
			if next := lastAddr(s.prefix).Next(); cursor.Less(next) || !next.IsValid() {
				cursor = next
			}
		}
		stack = append(stack, open{span: s, state: state, children: new(big.Int)})
	}
	for len(stack) > 0 {
		closeTop()
	}
	if cursor.IsValid() && !last.Less(cursor) {
		gap(last.Next())
	}
	u.free = new(big.Int).Sub(u.size, u.allocated)
	u.free.Sub(u.free, u.reserved).Sub(u.free, u.cooling)
	return u
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

// blockSize is the number of addresses of p.
func blockSize(p netip.Prefix) *big.Int {
	return new(big.Int).Lsh(big.NewInt(1), uint(p.Addr().BitLen()-p.Bits()))
}

// poolStatus renders a pool's usage and cooling list for its status.
func poolStatus(u *poolUsage, list []cooled) *networkingv1alpha1.PoolStatus {
	s := &networkingv1alpha1.PoolStatus{
		Size:            u.size.String(),
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
