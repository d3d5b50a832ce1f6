package allocation

import (
	"net/netip"
	"slices"
)

// pools returns the allocated delegable records of the claim a pool request
// is taken from that could hold it, in that claim's spec order.
func (l *ledger) pools(req request) []*record {
	e, ok := l.claims[req.from]
	if !ok {
		return nil
	}
	var out []*record
	for _, k := range e.order {
		r := e.records[k]
		if r == nil || !r.allocated || !r.req.delegable {
			continue
		}
		if req.pool.IsValid() && r.prefix != req.pool {
			continue
		}
		if req.length <= r.prefix.Bits() || req.length > r.prefix.Addr().BitLen() {
			continue
		}
		out = append(out, r)
	}
	return out
}

// firstFit returns the lowest prefix of the given length inside pool that
// overlaps no allocation other than the pool's own chain, no reservation
// and no cooling sub-prefix. It walks the pool's sub-allocations and those
// ranges in address order from the pool's full mark: below it every
// address is taken, so a pool filled from the bottom is not walked again
// from its start.
func (l *ledger) firstFit(pool *record, length int) (netip.Prefix, bool) {
	p := pool.prefix
	cursor, last := p.Addr(), lastAddr(p)
	mark, marked := l.full[pool]
	if marked {
		if mark.full {
			return netip.Prefix{}, false
		}
		cursor = mark.low
	}
	chain := l.ancestors(pool.req, p)
	for q, h := range l.held.Overlapping(p) {
		if q.Bits() > p.Bits() {
			break
		}
		if h != pool && !chain[h] {
			// Something outside the chain holds the whole pool.
			return netip.Prefix{}, false
		}
	}
	// free is the first address no allocation takes, once seen; taken
	// says every address to the pool's end is.
	var free netip.Addr
	seen, taken := false, false
	// fits returns the first prefix of the length at or after the cursor,
	// if the pool holds it.
	fits := func() (netip.Prefix, bool) {
		start := cursor
		if aligned := netip.PrefixFrom(cursor, length).Masked(); aligned.Addr() != cursor {
			start = lastAddr(aligned).Next() // invalid past the family's last address
		}
		candidate := netip.PrefixFrom(start, length)
		if !start.IsValid() || last.Less(lastAddr(candidate)) {
			return netip.Prefix{}, false
		}
		return candidate, true
	}
	done := func(found bool, candidate netip.Prefix) (netip.Prefix, bool) {
		if !seen {
			free = cursor
		}
		l.full[pool] = fullMark{low: free, full: !seen && taken}
		if !found {
			return netip.Prefix{}, false
		}
		return candidate, true
	}
	// step passes a taken range q: it returns a result when the walk is
	// over.
	step := func(q netip.Prefix) (netip.Prefix, bool, bool) {
		first, end := q.Addr(), lastAddr(q)
		if end.Less(cursor) {
			return netip.Prefix{}, false, false // inside one passed already
		}
		if cursor.Less(first) && !seen {
			free, seen = cursor, true
		}
		candidate, ok := fits()
		if !ok {
			p, found := done(false, netip.Prefix{})
			return p, found, true
		}
		if lastAddr(candidate).Less(first) {
			p, found := done(true, candidate)
			return p, found, true
		}
		if end == last {
			taken = true
			p, found := done(false, netip.Prefix{})
			return p, found, true
		}
		if next := end.Next(); cursor.Less(next) {
			cursor = next
		}
		return netip.Prefix{}, false, false
	}
	// Reservations and cooling sub-prefixes are taken too: merged into the
	// walk in address order.
	excluded := l.excluded(pool, cursor)
	for _, block := range cover(p, cursor, nil) {
		for q := range l.held.Overlapping(block) {
			if q.Bits() <= p.Bits() {
				continue // the pool and its chain
			}
			for excluded.more() && excluded.first().Addr().Less(q.Addr()) {
				if found, ok, over := step(excluded.first()); over {
					return found, ok
				}
				excluded.next()
			}
			if found, ok, over := step(q); over {
				return found, ok
			}
		}
	}
	for ; excluded.more(); excluded.next() {
		if found, ok, over := step(excluded.first()); over {
			return found, ok
		}
	}
	candidate, ok := fits()
	return done(ok, candidate)
}

// excluded returns the ranges of a pool that first fit skips although
// nothing holds them, from the first that ends at from or above, in
// address order: its reservations and its cooling sub-prefixes.
func (l *ledger) excluded(pool *record, from netip.Addr) excludedRanges {
	var reserved []netip.Prefix
	if pool.policy != nil {
		reserved = pool.policy.reserved
	}
	return excludedRanges{tailFrom(reserved, from), tailFrom(l.coolingSpans[pool], from)}
}

// tailFrom returns the tail of list, disjoint prefixes in address order, from
// the first one that ends at a or above.
func tailFrom(list []netip.Prefix, a netip.Addr) []netip.Prefix {
	i, _ := slices.BinarySearchFunc(list, a, func(e netip.Prefix, a netip.Addr) int { return lastAddr(e).Compare(a) })
	return list[i:]
}

// excludedRanges walks two lists of disjoint prefixes in address order
// (a pool's reservations and its cooling prefixes) as one, without
// merging them into a new list at every first fit.
type excludedRanges struct {
	a, b []netip.Prefix
}

// more reports whether a range is left.
func (e *excludedRanges) more() bool { return len(e.a) > 0 || len(e.b) > 0 }

// first returns the lowest range left; more must be true.
func (e *excludedRanges) first() netip.Prefix {
	if len(e.b) == 0 || (len(e.a) > 0 && comparePrefixes(e.a[0], e.b[0]) <= 0) {
		return e.a[0]
	}
	return e.b[0]
}

// next drops the lowest range left.
func (e *excludedRanges) next() {
	if len(e.b) == 0 || (len(e.a) > 0 && comparePrefixes(e.a[0], e.b[0]) <= 0) {
		e.a = e.a[1:]
	} else {
		e.b = e.b[1:]
	}
}

// fullMark is how far a pool is taken from its start: every address below
// low is allocated; full when all of it is.
type fullMark struct {
	low  netip.Addr
	full bool
}

// lowerFullMarks moves the full marks of the pools around a freed prefix
// down to it.
func (l *ledger) lowerFullMarks(freed netip.Prefix) {
	start := freed.Addr()
	for q, h := range l.held.Overlapping(freed) {
		if q.Bits() >= freed.Bits() {
			break
		}
		if mark, ok := l.full[h]; ok && (mark.full || start.Less(mark.low)) {
			l.full[h] = fullMark{low: start}
		}
		if h.req.delegable {
			l.poolChanged(h)
		}
	}
}

// cover returns the CIDR blocks, in address order, that cover the
// addresses of p from from on.
func cover(p netip.Prefix, from netip.Addr, out []netip.Prefix) []netip.Prefix {
	if lastAddr(p).Less(from) {
		return out
	}
	if !p.Addr().Less(from) || p.IsSingleIP() {
		return append(out, p)
	}
	lo := netip.PrefixFrom(p.Addr(), p.Bits()+1)
	hi := netip.PrefixFrom(lastAddr(lo).Next(), p.Bits()+1)
	return cover(hi, from, cover(lo, from, out))
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr()
	b := a.As16()
	for i, host := len(b)-1, a.BitLen()-p.Bits(); host > 0; i, host = i-1, host-8 {
		b[i] |= 0xff >> max(8-host, 0)
	}
	if a.Is4() {
		return netip.AddrFrom16(b).Unmap()
	}
	return netip.AddrFrom16(b)
}
