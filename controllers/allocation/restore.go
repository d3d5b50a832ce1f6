package allocation

import (
	"net/netip"
	"slices"
	"time"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// restore replaces the ledger's decisions with ones rebuilt from the
// claims' status: recorded allocations stand (the caller passes only those
// that answer their record's request as it is now), then records waiting
// and undecided records are decided first come, first served (a delegable
// prefix allocated on the way serves the records waiting for it at once,
// as sync does). Should
// status ever hold overlapping allocations, the first seen stands and the
// other is decided again. The write fence is kept: it follows the
// informer, not the ledger.
func (l *ledger) restore(claims []claimSpec) []change {
	l.held, l.waiting = prefixindex.Index[*record]{}, prefixindex.Index[*record]{}
	l.waitingFrom = map[string]map[*record]bool{}
	l.claims = make(map[string]*claimEntry, len(claims))
	l.full = map[*record]fullMark{}
	l.cooling, l.coolingSpans, l.figures = map[*record][]cooled{}, map[*record][]netip.Prefix{}, map[*record]*poolCounts{}
	l.total = 0
	cooling := map[*record][]cooled{}
	var standing, undecided []*record
	recorded := map[*record]recordedStatus{}
	now := l.now()
	for _, c := range claims {
		e := &claimEntry{uid: c.uid, generation: c.generation, records: map[networkingv1alpha1.RecordKey]*record{}}
		l.claims[c.name] = e
		for _, rs := range c.records {
			e.order = append(e.order, rs.key)
			r := &record{claim: c.name, recordSpec: rs, seq: c.resourceVersion, since: now.Truncate(time.Second)}
			e.records[rs.key] = r
			l.total++
			s, ok := c.recorded[rs.key]
			switch {
			case !ok:
				r.observed = now
				undecided = append(undecided, r)
			case s.allocated:
				r.seq, r.since, r.prefix = s.seq, s.date, s.prefix
				standing = append(standing, r)
				if len(s.cooling) > 0 {
					cooling[r] = s.cooling
				}
			default:
				r.seq, r.since = s.seq, s.date
				recorded[r] = s
				undecided = append(undecided, r)
			}
		}
	}
	// A record taken from a pool stands only once its pool does, which may
	// come later in the order: pass again while a pass allocated anything.
	// Then orphans stand, inside what their pool's chain still holds.
	slices.SortFunc(standing, compareWaiting)
	for _, orphans := range []bool{false, true} {
		for progress := true; progress && len(standing) > 0; {
			progress = false
			var waiting []*record
			for _, r := range standing {
				_, blocked := l.blocker(r, r.prefix)
				stand := !blocked && (r.req.from == "" || l.parentFor(r.req, r.prefix, false) != nil)
				if orphans {
					stand = !blocked || l.orphanWithin(r, r.prefix)
				}
				if !stand {
					waiting = append(waiting, r)
					continue
				}
				l.allocate(r, r.prefix)
				progress = true
			}
			standing = waiting
		}
	}
	for _, r := range standing {
		r.since, r.observed = now.Truncate(time.Second), now
		undecided = append(undecided, r)
	}
	// The pools that stand keep the grace periods their status records.
	for r, list := range cooling {
		if r.allocated && r.req.delegable {
			list, prefixes := coolingInside(r.prefix, list)
			slices.SortStableFunc(list, func(a, b cooled) int { return a.until.Compare(b.until) })
			l.setCooling(r, list, nil, prefixes)
		}
	}
	// Records that waited before go first, whatever their order says, then
	// the ones nobody decided yet.
	slices.SortFunc(undecided, func(a, b *record) int {
		_, waitedA := recorded[a]
		_, waitedB := recorded[b]
		if waitedA != waitedB {
			if waitedA {
				return -1
			}
			return 1
		}
		return compareWaiting(a, b)
	})
	var changes []change
	for _, r := range undecided {
		s, wasWaiting := recorded[r]
		c := l.decide(r)
		report := true
		switch {
		case r.allocated:
			r.since = now.Truncate(time.Second)
		case !wasWaiting:
		case r.reason == s.reason && r.reason == networkingv1alpha1.ReasonConflict && l.stillBlocks(r, s.conflict):
			// The holder its status names still blocks it: keep the
			// message, rather than name another holder after a restart.
			r.holder = s.conflict
			report = false
		case r.reason == s.reason && r.reason != networkingv1alpha1.ReasonConflict:
			report = false
		}
		if report {
			changes = append(changes, c)
		}
		if r.allocated && r.req.delegable {
			// A pool that nobody's status recorded yet (its claim's
			// status was not written before the restart): the records
			// that waited for it, decided before it, are served now, as
			// sync serves them, ahead of the undecided ones after it.
			changes = append(changes, l.promote(l.candidates(nil, []string{r.claim}))...)
		}
	}
	return changes
}

// orphanWithin reports whether every allocation that blocks r holding p
// overlaps it only through an orphan: r, or the top of its delegation
// chain, or the top of the blocker's, is taken from a claim that no longer
// holds its pool, and lies inside the other. The pool went and its
// sub-prefixes kept their space (sticky), inside what the pool's own chain
// still holds.
func (l *ledger) orphanWithin(r *record, p netip.Prefix) bool {
	chain := l.ancestors(r.req, p)
	for q, h := range l.held.Overlapping(p) {
		if h == r || chain[h] || l.descendsFrom(h, r, p) {
			continue
		}
		if !l.orphanInside(r, p, q) && !l.orphanInside(h, q, p) {
			return false
		}
	}
	return true
}

// orphanInside reports whether the top of r's delegation chain (r holding
// p) is an orphan that lies inside outer.
func (l *ledger) orphanInside(r *record, p, outer netip.Prefix) bool {
	top, topPrefix := r, p
	for range maxChain {
		parent := l.parentFor(top.req, topPrefix, false)
		if parent == nil {
			break
		}
		top, topPrefix = parent, parent.prefix
	}
	return top.req.from != "" && outer.Bits() <= topPrefix.Bits() && outer.Contains(topPrefix.Addr())
}

// stillBlocks reports whether holder, an allocation of another record, is
// held and blocks r.
func (l *ledger) stillBlocks(r *record, holder holding) bool {
	if holder.claim == "" || !holder.prefix.IsValid() || !r.prefix.IsValid() || !holder.prefix.Overlaps(r.prefix) {
		return false
	}
	chain := l.ancestors(r.req, r.prefix)
	for _, h := range l.held.Holders(holder.prefix) {
		if h != r && h.claim == holder.claim && !chain[h] && !l.descendsFrom(h, r, r.prefix) {
			return true
		}
	}
	return false
}

// coolingInside keeps the entries of a pool's cooling list, as its status
// records it, whose prefixes lie strictly inside the pool and overlap no
// other kept one (the outer one stays), in the list's order, and returns
// their prefixes in address order. The ledger's figures count a pool's
// cooling prefixes as disjoint spans inside it: a status written by hand,
// or by a bug, must not make them count an address twice, or one outside
// the pool, and so make the free count wrap around.
func coolingInside(pool netip.Prefix, list []cooled) ([]cooled, []netip.Prefix) {
	var prefixes []netip.Prefix
	for _, c := range list {
		if p := c.prefix; p == p.Masked() && p.Bits() > pool.Bits() && pool.Contains(p.Addr()) {
			prefixes = append(prefixes, p)
		}
	}
	slices.SortFunc(prefixes, comparePrefixes)
	prefixes = slices.Compact(prefixes)
	kept := prefixes[:0]
	for _, p := range prefixes {
		if n := len(kept); n == 0 || !kept[n-1].Overlaps(p) {
			kept = append(kept, p)
		}
	}
	out := make([]cooled, 0, len(kept))
	for _, c := range list {
		if _, ok := slices.BinarySearchFunc(kept, c.prefix, comparePrefixes); ok &&
			!slices.ContainsFunc(out, func(o cooled) bool { return o.prefix == c.prefix }) {
			out = append(out, c)
		}
	}
	return out, kept
}
