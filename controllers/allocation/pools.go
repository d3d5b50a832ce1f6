package allocation

import (
	"net/netip"
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
// overlaps no allocation other than the pool's own chain. It walks the
// pool's sub-allocations in address order from the pool's full mark:
// below it every address is taken, so a pool filled from the bottom is not
// walked again from its start.
func (l *ledger) firstFit(pool *record, length int) (netip.Prefix, bool) {
	p := pool.prefix
	bits := p.Addr().BitLen()
	cursor, last := toUint128(p.Addr()), toUint128(lastAddr(p))
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
	size := uint128{}.addOne().shl(uint(bits - length))
	// free is the first address no allocation takes, once seen; taken
	// says every address to the pool's end is.
	var free uint128
	seen, taken := false, false
	fits := func() (uint128, bool) {
		start, ok := cursor.alignUp(uint(bits - length))
		if !ok || last.less(start) || last.less(start.add(size).sub1()) {
			return uint128{}, false
		}
		return start, true
	}
	done := func(found bool, start uint128) (netip.Prefix, bool) {
		if !seen {
			free = cursor
		}
		l.full[pool] = fullMark{low: free, full: !seen && taken}
		if !found {
			return netip.Prefix{}, false
		}
		return netip.PrefixFrom(start.addr(bits), length), true
	}
	for _, block := range cover(p, cursor, nil) {
		for q := range l.held.Overlapping(block) {
			if q.Bits() <= p.Bits() {
				continue // the pool and its chain
			}
			first, end := toUint128(q.Addr()), toUint128(lastAddr(q))
			if end.less(cursor) {
				continue // inside one passed already
			}
			if cursor.less(first) && !seen {
				free, seen = cursor, true
			}
			start, ok := fits()
			if !ok {
				return done(false, uint128{})
			}
			if start.add(size).sub1().less(first) {
				return done(true, start)
			}
			if end == last {
				taken = true
				return done(false, uint128{})
			}
			if next := end.addOne(); cursor.less(next) {
				cursor = next
			}
		}
	}
	start, ok := fits()
	return done(ok, start)
}

// fullMark is how far a pool is taken from its start: every address below
// low is allocated; full when all of it is.
type fullMark struct {
	low  uint128
	full bool
}

// lowerFullMarks moves the full marks of the pools around a freed prefix
// down to it.
func (l *ledger) lowerFullMarks(freed netip.Prefix) {
	start := toUint128(freed.Addr())
	for q, h := range l.held.Overlapping(freed) {
		if q.Bits() >= freed.Bits() {
			break
		}
		if mark, ok := l.full[h]; ok && (mark.full || start.less(mark.low)) {
			l.full[h] = fullMark{low: start}
		}
	}
}

// cover returns the CIDR blocks, in address order, that cover the
// addresses of p from from on.
func cover(p netip.Prefix, from uint128, out []netip.Prefix) []netip.Prefix {
	if toUint128(lastAddr(p)).less(from) {
		return out
	}
	if !toUint128(p.Addr()).less(from) || p.Bits() == p.Addr().BitLen() {
		return append(out, p)
	}
	bits := p.Addr().BitLen()
	half := uint128{}.addOne().shl(uint(bits - p.Bits() - 1))
	lo := netip.PrefixFrom(p.Addr(), p.Bits()+1)
	hi := netip.PrefixFrom(toUint128(p.Addr()).add(half).addr(bits), p.Bits()+1)
	return cover(hi, from, cover(lo, from, out))
}
