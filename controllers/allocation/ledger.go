package allocation

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// ledger is the registry's book of who holds which prefix. It decides every
// record, in memory and in the order it learns of them, so that decisions
// are serialized without touching the API; the controller then writes them
// to each claim's status, and the ledger's write fence says when a write
// may go. It is not safe for concurrent use.
//
// Rules:
//   - a record is allocated when its prefix overlaps no prefix held by
//     another record, except the records of its delegation chain (the
//     delegable prefix it is taken from, that one's, and so on, or records
//     taken from it), and then held for as long as it stays in spec with the
//     same request (sticky);
//   - a record taken from a pool gets the lowest free prefix of its length
//     in the pool (first fit);
//   - otherwise it waits, and waiting records are decided again, first come
//     first served, when space that could serve them frees up: in the order
//     of the resourceVersion at which the registry first saw them (etcd's
//     order), all of it stored in the claims, so that a ledger rebuilt from
//     them orders the same way;
//   - restore rebuilds the book from status: recorded allocations stand.
type ledger struct {
	now    func() time.Time
	claims map[string]*claimEntry
	// total counts the records of all claims.
	total int
	// held indexes the allocated records by prefix.
	held prefixindex.Index[*record]
	// waiting indexes the waiting records that name their prefix, for
	// the space they wait for; waitingFrom the waiting records taken from
	// a claim, by that claim, for the pools they wait for.
	waiting     prefixindex.Index[*record]
	waitingFrom map[string]map[*record]bool

	// stored indexes the allocations that claims' status, as the informer
	// last delivered it, records (in spec or not): the write fence. A new
	// allocation is written only once no other claim's status shows an
	// overlapping allocation that the ledger no longer holds, so that
	// stored statuses never overlap outside a delegation chain, not even
	// between a release and the write that records it.
	stored   prefixindex.Index[string]
	storedBy map[string][]netip.Prefix

	// full marks how far each pool is taken from its start, so that first
	// fit does not walk the taken part again.
	full map[*record]fullMark
}

// recordKey identifies a record within its claim, as the API's list keys
// do: by name when it has one, else by prefix.
type recordKey struct {
	name   string
	prefix netip.Prefix
}

func (k recordKey) String() string {
	if k.name != "" {
		return k.name
	}
	return k.prefix.String()
}

// request is what a spec record asks for.
type request struct {
	// prefix is the prefix claimed; invalid for a pool record.
	prefix netip.Prefix
	// from is the claim the record is taken from, pool (if valid) which of
	// its delegable prefixes.
	from string
	pool netip.Prefix
	// length is a pool record's prefix length; -1 for a record that names
	// its prefix.
	length int
	// delegable lets records of other claims be taken from this one.
	delegable bool
}

// sameSpace reports whether two requests ask for the same space, so that a
// decision on one stands for the other: only delegable may differ.
func (r request) sameSpace(o request) bool {
	r.delegable, o.delegable = false, false
	return r == o
}

// claimEntry is the ledger's view of one claim.
type claimEntry struct {
	uid        types.UID
	generation int64
	records    map[recordKey]*record
	// order is the spec's order of the records, in which a claim's
	// delegable prefixes are tried as pools.
	order []recordKey
}

// record is the ledger's state of one spec record.
type record struct {
	claim string
	key   recordKey
	req   request

	allocated bool
	// prefix is the allocated prefix; for a waiting record that names its
	// prefix, the prefix it waits for.
	prefix netip.Prefix
	// reason says why a record waits; holder the allocation that blocks it
	// (Conflict), or the pool searched or asked for (PoolExhausted,
	// PoolNotFound; holder.prefix may be invalid).
	reason string
	holder holding

	// seq is the resourceVersion of the claim when the ledger first
	// decided the record: the waiting order. 0 for records decided before
	// it was recorded, which wait ahead of the others, by since.
	seq uint64
	// since is when the record got its current state, to the second as
	// status stores it: the allocation date, or since when it waits.
	since time.Time
	// observed is when the ledger first saw the record, for the
	// create-to-decision latency; zero for records restored from status.
	observed time.Time
}

// holding is a prefix a claim holds.
type holding struct {
	claim  string
	prefix netip.Prefix
}

// Reasons a record waits for, as status records them.
const (
	reasonConflict      = "Conflict"
	reasonPoolExhausted = "PoolExhausted"
	reasonPoolNotFound  = "PoolNotFound"
)

// decision is a copy of a record's state, with the delegation step of an
// allocated record, for status writes.
type decision struct {
	allocated bool
	prefix    netip.Prefix
	reason    string
	holder    holding
	length    int
	parent    holding
	seq       uint64
	since     time.Time
}

// claimSpec is what the ledger needs of a claim.
type claimSpec struct {
	name            string
	uid             types.UID
	generation      int64
	resourceVersion uint64
	records         []recordSpec
	// recorded is the claim's status, by record key; used by restore only.
	recorded map[recordKey]recordedStatus
}

// recordSpec is one spec record.
type recordSpec struct {
	key recordKey
	req request
}

// recordedStatus is a status record as stored.
type recordedStatus struct {
	allocated bool
	prefix    netip.Prefix
	date      time.Time
	seq       uint64
	reason    string
	// conflict is the allocation a Conflict record names.
	conflict holding
}

// changeKind says what happened to a record.
type changeKind string

const (
	changeAllocated   changeKind = "Allocated"
	changeUnavailable changeKind = "Unavailable"
	// changeBlocker: a waiting record now waits for another reason or
	// holder; only its status message changes.
	changeBlocker  changeKind = "Blocker"
	changeReleased changeKind = "Released"
)

// change is one thing the ledger did, for status writes, events, logs and
// metrics.
type change struct {
	kind   changeKind
	claim  string
	key    recordKey
	prefix netip.Prefix
	reason string
	holder holding
	length int
}

func newLedger(now func() time.Time) *ledger {
	return &ledger{
		now:         now,
		claims:      map[string]*claimEntry{},
		waitingFrom: map[string]map[*record]bool{},
		storedBy:    map[string][]netip.Prefix{},
		full:        map[*record]fullMark{},
	}
}

// stamp is now as status stores it.
func (l *ledger) stamp() time.Time { return l.now().Truncate(time.Second) }

// sync brings the ledger up to date with a claim's spec: records that left
// it, or ask for other space now, are released (deciding again who waited
// for their space), new ones decided. A spec the ledger already has, or an
// older one, changes nothing.
func (l *ledger) sync(c claimSpec) []change {
	var changes []change
	e, ok := l.claims[c.name]
	if ok && e.uid != c.uid {
		// Deleted and created again under the same name.
		changes = l.forget(c.name, e.uid)
		ok = false
	}
	if ok && c.generation <= e.generation {
		return changes
	}
	if !ok {
		e = &claimEntry{uid: c.uid, records: map[recordKey]*record{}}
		l.claims[c.name] = e
	}
	e.generation = c.generation
	inSpec := map[recordKey]request{}
	e.order = e.order[:0]
	for _, r := range c.records {
		inSpec[r.key] = r.req
		e.order = append(e.order, r.key)
	}
	var freed []*record
	var delegated []string
	for _, k := range sortedKeys(e.records) {
		r := e.records[k]
		req, ok := inSpec[k]
		if ok && req.sameSpace(r.req) {
			if req.delegable != r.req.delegable && r.allocated {
				// A pool more or less: its claim's waiters wait
				// differently now.
				delegated = append(delegated, c.name)
			}
			r.req.delegable = req.delegable
			continue
		}
		if l.drop(r) {
			freed = append(freed, r)
			changes = append(changes, change{kind: changeReleased, claim: c.name, key: k, prefix: r.prefix})
		}
		delete(e.records, k)
		l.total--
	}
	// Release before deciding: space moved within the spec of one claim
	// must not be blocked by its own old record.
	changes = append(changes, l.promote(l.candidates(freed, delegated))...)
	now := l.now()
	for _, rs := range c.records {
		if _, ok := e.records[rs.key]; ok {
			continue
		}
		r := &record{claim: c.name, key: rs.key, req: rs.req, seq: c.resourceVersion, since: now.Truncate(time.Second), observed: now}
		e.records[rs.key] = r
		l.total++
		changes = append(changes, l.decide(r))
		if r.allocated && r.req.delegable {
			changes = append(changes, l.promote(l.candidates(nil, []string{c.name}))...)
		}
	}
	return changes
}

// forget releases everything of a deleted claim; uid guards against a
// late deletion of an older claim of the same name.
func (l *ledger) forget(name string, uid types.UID) []change {
	e, ok := l.claims[name]
	if !ok || (uid != "" && e.uid != uid) {
		return nil
	}
	delete(l.claims, name)
	l.total -= len(e.records)
	var changes []change
	var freed []*record
	for _, k := range sortedKeys(e.records) {
		r := e.records[k]
		if l.drop(r) {
			freed = append(freed, r)
			changes = append(changes, change{kind: changeReleased, claim: name, key: k, prefix: r.prefix})
		}
	}
	return append(changes, l.promote(l.candidates(freed, nil))...)
}

// drop takes a record out of the indexes and reports whether it was held.
func (l *ledger) drop(r *record) bool {
	if r.allocated {
		l.held.Delete(r.prefix, r)
		delete(l.full, r)
		l.lowerFullMarks(r.prefix)
		return true
	}
	l.unwait(r)
	return false
}

func (l *ledger) unwait(r *record) {
	if r.prefix.IsValid() {
		l.waiting.Delete(r.prefix, r)
	}
	if r.req.from != "" {
		delete(l.waitingFrom[r.req.from], r)
		if len(l.waitingFrom[r.req.from]) == 0 {
			delete(l.waitingFrom, r.req.from)
		}
	}
}

// decide allocates a record or makes it wait, and says which.
func (l *ledger) decide(r *record) change {
	if r.req.length >= 0 {
		return l.decidePool(r)
	}
	p := r.req.prefix
	if r.req.from != "" && l.parentFor(r.req, p, true) == nil {
		return l.wait(r, p, reasonPoolNotFound, holding{claim: r.req.from, prefix: r.req.pool})
	}
	if holder, blocked := l.blocker(r, p); blocked {
		return l.wait(r, p, reasonConflict, holder)
	}
	l.allocate(r, p)
	return change{kind: changeAllocated, claim: r.claim, key: r.key, prefix: p}
}

// decidePool takes the lowest free prefix of the record's length from the
// first of the source claim's pools that has one.
func (l *ledger) decidePool(r *record) change {
	pools := l.pools(r.req)
	if len(pools) == 0 {
		return l.wait(r, netip.Prefix{}, reasonPoolNotFound, holding{claim: r.req.from, prefix: r.req.pool})
	}
	for _, pool := range pools {
		p, ok := l.firstFit(pool, r.req.length)
		if !ok {
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
	return l.wait(r, netip.Prefix{}, reasonPoolExhausted, holding{claim: pools[0].claim, prefix: pools[0].prefix})
}

func (l *ledger) allocate(r *record, p netip.Prefix) {
	r.allocated, r.prefix, r.reason, r.holder = true, p, "", holding{}
	l.held.Insert(p, r)
}

func (l *ledger) wait(r *record, p netip.Prefix, reason string, holder holding) change {
	r.allocated, r.prefix, r.reason, r.holder = false, p, reason, holder
	if p.IsValid() {
		l.waiting.Insert(p, r)
	}
	if r.req.from != "" {
		if l.waitingFrom[r.req.from] == nil {
			l.waitingFrom[r.req.from] = map[*record]bool{}
		}
		l.waitingFrom[r.req.from][r] = true
	}
	return change{kind: changeUnavailable, claim: r.claim, key: r.key, prefix: p, reason: reason, holder: holder, length: r.req.length}
}

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
			case w.reason != before.reason || w.holder != before.holder || w.prefix != before.prefix:
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
	return cmp.Or(
		cmp.Compare(a.seq, b.seq),
		a.since.Compare(b.since),
		strings.Compare(a.claim, b.claim),
		strings.Compare(a.key.name, b.key.name),
		a.key.prefix.Compare(b.key.prefix),
	)
}

// restore replaces the ledger's decisions with ones rebuilt from the
// claims' status: recorded allocations stand (the caller passes only those
// that answer their record's request as it is now), then records waiting
// and undecided records are decided first come, first served. Should status ever hold overlapping
// allocations, the first seen stands and the other is decided again. The
// write fence is kept: it follows the informer, not the ledger.
func (l *ledger) restore(claims []claimSpec) []change {
	l.held, l.waiting = prefixindex.Index[*record]{}, prefixindex.Index[*record]{}
	l.waitingFrom = map[string]map[*record]bool{}
	l.claims = map[string]*claimEntry{}
	l.full = map[*record]fullMark{}
	l.total = 0
	var standing, undecided []*record
	recorded := map[*record]recordedStatus{}
	now := l.now()
	for _, c := range claims {
		e := &claimEntry{uid: c.uid, generation: c.generation, records: map[recordKey]*record{}}
		l.claims[c.name] = e
		for _, rs := range c.records {
			e.order = append(e.order, rs.key)
			r := &record{claim: c.name, key: rs.key, req: rs.req, seq: c.resourceVersion, since: now.Truncate(time.Second)}
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
		switch {
		case r.allocated:
			r.since = now.Truncate(time.Second)
		case !wasWaiting:
		case r.reason == s.reason && r.reason == reasonConflict && l.stillBlocks(r, s.conflict):
			// The holder its status names still blocks it: keep the
			// message, rather than name another holder after a restart.
			r.holder = s.conflict
			continue
		case r.reason == s.reason && r.reason != reasonConflict:
			continue
		}
		changes = append(changes, c)
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

// records returns the ledger's decisions for a claim at the generation it
// last synced, or false if it does not know the claim (of that uid).
func (l *ledger) records(name string, uid types.UID) (int64, map[recordKey]decision, bool) {
	e, ok := l.claims[name]
	if !ok || e.uid != uid {
		return 0, nil, false
	}
	out := make(map[recordKey]decision, len(e.records))
	for k, r := range e.records {
		d := decision{allocated: r.allocated, prefix: r.prefix, reason: r.reason, holder: r.holder, length: r.req.length, seq: r.seq, since: r.since}
		if r.allocated {
			if parent := l.parentFor(r.req, r.prefix, false); parent != nil {
				d.parent = holding{claim: parent.claim, prefix: parent.prefix}
			}
		}
		out[k] = d
	}
	return e.generation, out, true
}

// recorded marks a claim's decisions as stored, so that latency is
// observed once per decision; it returns the observation times it cleared.
func (l *ledger) recorded(name string, generation int64) []time.Time {
	e, ok := l.claims[name]
	if !ok || e.generation != generation {
		return nil
	}
	var observed []time.Time
	for _, r := range e.records {
		if !r.observed.IsZero() {
			observed = append(observed, r.observed)
			r.observed = time.Time{}
		}
	}
	return observed
}

// counts returns the number of allocated and waiting records.
func (l *ledger) counts() (allocated, waiting int) {
	return l.held.Len(), l.total - l.held.Len()
}

// recordStored updates the write fence with what a claim's status now
// records, and returns the claims the ledger allocated a prefix that
// overlaps one the status no longer shows: their writes waited for it.
func (l *ledger) recordStored(name string, now []netip.Prefix) []string {
	var wake []string
	for _, p := range l.storedBy[name] {
		l.stored.Delete(p, name)
		if slices.Contains(now, p) {
			continue
		}
		for _, h := range l.held.Overlapping(p) {
			if h.claim != name {
				wake = append(wake, h.claim)
			}
		}
	}
	for _, p := range now {
		l.stored.Insert(p, name)
	}
	if len(now) == 0 {
		delete(l.storedBy, name)
	} else {
		l.storedBy[name] = now
	}
	return wake
}

// fenced reports whether writing the allocations newly of claim name must
// wait: another claim's stored status still shows an overlapping
// allocation that the ledger no longer holds (its release is not stored
// yet).
func (l *ledger) fenced(name string, newly []netip.Prefix) bool {
	for _, p := range newly {
		for q, holder := range l.stored.Overlapping(p) {
			if holder != name && !l.holds(holder, q) {
				return true
			}
		}
	}
	return false
}

// holds reports whether the ledger has claim holding p.
func (l *ledger) holds(claim string, p netip.Prefix) bool {
	for _, h := range l.held.Holders(p) {
		if h.claim == claim {
			return true
		}
	}
	return false
}

func sortedKeys(records map[recordKey]*record) []recordKey {
	out := slices.Collect(maps.Keys(records))
	slices.SortFunc(out, func(a, b recordKey) int {
		return cmp.Or(strings.Compare(a.name, b.name), a.prefix.Compare(b.prefix))
	})
	return out
}
