package allocation

// The rules by which the ledger decides:
//   - a record is allocated when its prefix overlaps no prefix held by
//     another record, except the records of its delegation chain (the
//     delegable prefix it is taken from, that one's, and so on, or records
//     taken from it), and then held for as long as it stays in spec with the
//     same request (sticky);
//   - a record taken from a pool gets the lowest free prefix of its length
//     in the pool (first fit, pools.go);
//   - otherwise it waits, and waiting records are decided again, first come
//     first served, when space that could serve them frees up: in the order
//     of the resourceVersion at which the registry first saw them (etcd's
//     order), all of it stored in the claims, so that a ledger rebuilt from
//     them orders the same way;
//   - restore rebuilds the book from status: recorded allocations stand
//     (restore.go).

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// decide allocates a record or makes it wait, and says which.
func (l *ledger) decide(r *record) change {
	if r.req.length >= 0 {
		return l.decidePool(r)
	}
	p := r.req.prefix
	if r.req.from != "" {
		parent := l.parentFor(r.req, p, true)
		if parent == nil {
			return l.wait(r, p, networkingv1alpha1.ReasonPoolNotFound, holding{claim: r.req.from, prefix: r.req.pool})
		}
		pool := holding{claim: parent.claim, prefix: parent.prefix}
		if why := parent.policy.refuses(parent, p.Bits(), l.heldFrom(r.claim, parent, r)); why != "" {
			return l.waitBecause(r, p, networkingv1alpha1.ReasonPoolPolicy, pool, why)
		}
		if c, ok := l.coolingFor(parent, p, r.claim); ok {
			return l.waitBecause(r, p, networkingv1alpha1.ReasonReuseGracePeriod, pool, coolingMessage(c, pool))
		}
	}
	if holder, blocked := l.blocker(r, p); blocked {
		return l.wait(r, p, networkingv1alpha1.ReasonConflict, holder)
	}
	l.allocate(r, p)
	return change{kind: changeAllocated, claim: r.claim, key: r.key, prefix: p}
}

// decidePool takes the lowest free prefix of the record's length from the
// first of the source claim's pools whose policy allows it and that has
// one. It waits with PoolPolicy when every pool's policy refuses it, and
// with PoolExhausted when some pool would take it but has no room.
func (l *ledger) decidePool(r *record) change {
	pools := l.pools(r.req)
	if len(pools) == 0 {
		return l.wait(r, netip.Prefix{}, networkingv1alpha1.ReasonPoolNotFound, holding{claim: r.req.from, prefix: r.req.pool})
	}
	var exhausted, refused *record
	var why string
	for _, pool := range pools {
		if reason := pool.policy.refuses(pool, r.req.length, l.heldFrom(r.claim, pool, r)); reason != "" {
			if refused == nil {
				refused, why = pool, reason
			}
			continue
		}
		p, ok := l.firstFit(pool, r.req.length)
		if !ok {
			if exhausted == nil {
				exhausted = pool
			}
			continue
		}
		if _, blocked := l.blocker(r, p); blocked {
			// Only an allocation that overlaps the whole pool, outside
			// its chain, which the ledger never makes.
			continue
		}
		l.allocate(r, p)
		return change{kind: changeAllocated, claim: r.claim, key: r.key, prefix: p}
	}
	if exhausted == nil && refused != nil {
		return l.waitBecause(r, netip.Prefix{}, networkingv1alpha1.ReasonPoolPolicy, holding{claim: refused.claim, prefix: refused.prefix}, why)
	}
	if exhausted == nil {
		exhausted = pools[0]
	}
	return l.wait(r, netip.Prefix{}, networkingv1alpha1.ReasonPoolExhausted, holding{claim: exhausted.claim, prefix: exhausted.prefix})
}

// parentFor returns the allocation that a record asking for req, holding
// p, is taken from: the record of claim req.from that strictly contains p
// (sub-prefixes are smaller than their pool, so chains never loop) (and is
// req.pool, if set). With delegable, only a delegable record counts: what a
// new decision needs; a record already taken from one stays linked to it
// when it stops being delegable. A claim's allocations never overlap each
// other, so there is at most one.
func (l *ledger) parentFor(req request, p netip.Prefix, delegable bool) *record {
	if req.from == "" || !p.IsValid() {
		return nil
	}
	for q, h := range l.held.Overlapping(p) {
		if q.Bits() >= p.Bits() {
			break // past the prefixes that strictly contain p
		}
		if h.claim == req.from && (h.req.delegable || !delegable) && (!req.pool.IsValid() || q == req.pool) {
			return h
		}
	}
	return nil
}

// maxChain bounds a walk up a delegation chain: each step is a shorter
// prefix, so chains are at most as deep as addresses are long.
const maxChain = 130

// ancestors returns the delegation chain above a record that asks for req
// and would hold p: its parent, the parent's parent, and so on.
func (l *ledger) ancestors(req request, p netip.Prefix) map[*record]bool {
	chain := map[*record]bool{}
	for parent := l.parentFor(req, p, false); parent != nil && !chain[parent] && len(chain) < maxChain; parent = l.parentFor(parent.req, parent.prefix, false) {
		chain[parent] = true
	}
	return chain
}

// descendsFrom reports whether allocation a is taken, directly or down a
// chain, from r holding p (r need not be held yet).
func (l *ledger) descendsFrom(a *record, r *record, p netip.Prefix) bool {
	cur := a
	for range maxChain {
		if cur.req.from == "" {
			return false
		}
		if cur.req.from == r.claim && p.Contains(cur.prefix.Addr()) && cur.prefix.Bits() > p.Bits() &&
			(!cur.req.pool.IsValid() || cur.req.pool == p) {
			return true
		}
		if cur = l.parentFor(cur.req, cur.prefix, false); cur == nil {
			return false
		}
	}
	return false
}

// blocker returns the first allocation of another record that overlaps p
// outside r's delegation chain, least specific first, so that the message
// names the widest holder.
func (l *ledger) blocker(r *record, p netip.Prefix) (holding, bool) {
	var chain map[*record]bool
	for q, h := range l.held.Overlapping(p) {
		if h == r {
			continue
		}
		if chain == nil {
			chain = l.ancestors(r.req, p)
		}
		if chain[h] || l.descendsFrom(h, r, p) {
			continue
		}
		return holding{claim: h.claim, prefix: q}, true
	}
	return holding{}, false
}

// candidates returns the waiting records that freed space or changed pools
// could serve, or that now wait for another reason: those waiting for space
// that overlaps a freed allocation, and those taken from a claim that holds
// a delegable prefix overlapping one, or that freed one, or from the claims
// in pools (which have a delegable prefix more or less).
func (l *ledger) candidates(freed []*record, pools []string) map[*record]bool {
	out := map[*record]bool{}
	from := map[string]bool{}
	for _, c := range pools {
		from[c] = true
	}
	for _, f := range freed {
		if f.req.delegable {
			// Its waiters now wait for another reason, or another pool.
			from[f.claim] = true
		}
		for _, w := range l.waiting.Overlapping(f.prefix) {
			out[w] = true
		}
		// The pools around it have room now, and so may the pools inside
		// it that it blocked (orphans of a pool that went).
		for _, h := range l.held.Overlapping(f.prefix) {
			if h.req.delegable {
				from[h.claim] = true
			}
		}
	}
	for c := range from {
		for w := range l.waitingFrom[c] {
			out[w] = true
		}
	}
	return out
}

// promote decides the candidates again, first come first served; records
// allocated a delegable prefix make the records waiting on their claim
// candidates in turn.
func (l *ledger) promote(cands map[*record]bool) []change {
	var changes []change
	for len(cands) > 0 {
		waiters := slices.Collect(maps.Keys(cands))
		slices.SortFunc(waiters, compareWaiting)
		var delegated []string
		for _, w := range waiters {
			if w.allocated || l.claims[w.claim] == nil || l.claims[w.claim].records[w.key] != w {
				continue // decided meanwhile, or gone
			}
			before := *w
			l.unwait(w)
			ch := l.decide(w)
			switch {
			case w.allocated:
				w.since = l.stamp()
				changes = append(changes, ch)
				if w.req.delegable {
					delegated = append(delegated, w.claim)
				}
			case w.reason != before.reason || w.holder != before.holder || w.prefix != before.prefix || w.detail != before.detail:
				ch.kind = changeBlocker
				changes = append(changes, ch)
			}
		}
		cands = l.candidates(nil, delegated)
	}
	return changes
}

// compareWaiting orders waiting records: first seen first (records from
// before the order was recorded ahead, by since), then by claim name and
// key, so that ties resolve the same way every time.
func compareWaiting(a, b *record) int {
	if (a.seq == 0) != (b.seq == 0) {
		if a.seq == 0 {
			return -1
		}
		return 1
	}
	// One at a time, not cmp.Or: the order is nearly always settled by
	// seq, and a restore sorts every record.
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := a.since.Compare(b.since); c != 0 {
		return c
	}
	if c := strings.Compare(a.claim, b.claim); c != 0 {
		return c
	}
	return compareRecords(a, b)
}
