package allocation

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// ledger is the registry's book of who holds which prefix. It decides every
// record, in memory and in the order it learns of them, so that decisions
// are serialized without touching the API; the controller then writes them
// to each claim's status. It is not safe for concurrent use.
//
// Rules:
//   - a record is allocated when its prefix overlaps no prefix held by
//     another claim, and then held for as long as it stays in spec (sticky);
//   - otherwise it waits, and waiting records are promoted first come, first
//     served, ordered by (waiting since, claim creation, claim name, prefix):
//     all of it stored in the claims, so a ledger rebuilt from them orders
//     the same way;
//   - restore rebuilds the book from status: recorded allocations stand.
type ledger struct {
	now     func() time.Time
	held    prefixindex.Index[string]
	waiting prefixindex.Index[string]
	claims  map[string]*claimEntry
}

// claimEntry is the ledger's view of one claim.
type claimEntry struct {
	uid        types.UID
	created    time.Time
	generation int64
	records    map[netip.Prefix]*decision
}

// decision is the ledger's state of one spec record.
type decision struct {
	allocated bool
	// holder and holderPrefix name, for a waiting record, the allocation
	// that blocks it.
	holder       string
	holderPrefix netip.Prefix
	// since is when the record got its current state, to the second as
	// status stores it: the allocation date, or since when it waits.
	since time.Time
	// observed is when the ledger first saw the record, for the
	// create-to-decision latency; zero for records restored from status.
	observed time.Time
}

// claimSpec is what the ledger needs of a claim.
type claimSpec struct {
	name       string
	uid        types.UID
	created    time.Time
	generation int64
	prefixes   []netip.Prefix
	// recorded is the claim's status, by prefix; used by restore only.
	recorded map[netip.Prefix]recordedStatus
}

// recordedStatus is a status record as stored.
type recordedStatus struct {
	allocated bool
	date      time.Time
	// holder and holderPrefix are the allocation an unavailable record's
	// message names, if it could be read.
	holder       string
	holderPrefix netip.Prefix
}

// changeKind says what happened to a record.
type changeKind string

const (
	changeAllocated   changeKind = "Allocated"
	changeUnavailable changeKind = "Unavailable"
	// changeBlocker: a waiting record is now blocked by another holder;
	// only its message changes.
	changeBlocker  changeKind = "Blocker"
	changeReleased changeKind = "Released"
)

// change is one thing the ledger did, for status writes, events, logs and
// metrics.
type change struct {
	kind         changeKind
	claim        string
	prefix       netip.Prefix
	holder       string
	holderPrefix netip.Prefix
}

func newLedger(now func() time.Time) *ledger {
	return &ledger{now: now, claims: map[string]*claimEntry{}}
}

// stamp is now as status stores it.
func (l *ledger) stamp() time.Time { return l.now().Truncate(time.Second) }

// sync brings the ledger up to date with a claim's spec: prefixes that left
// it are released (promoting who waited for them), new ones decided. A spec
// the ledger already has, or an older one, changes nothing.
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
		e = &claimEntry{uid: c.uid, created: c.created, records: map[netip.Prefix]*decision{}}
		l.claims[c.name] = e
	}
	e.generation = c.generation
	inSpec := map[netip.Prefix]bool{}
	for _, p := range c.prefixes {
		inSpec[p] = true
	}
	var freed []netip.Prefix
	for _, p := range sortedPrefixes(e.records) {
		if inSpec[p] {
			continue
		}
		if l.drop(c.name, p, e.records[p]) {
			freed = append(freed, p)
			changes = append(changes, change{kind: changeReleased, claim: c.name, prefix: p})
		}
		delete(e.records, p)
	}
	// Release before deciding: a prefix moved within the spec of one claim
	// must not be blocked by its own old record.
	changes = append(changes, l.promote(freed)...)
	now := l.now()
	for _, p := range c.prefixes {
		if _, ok := e.records[p]; ok {
			continue
		}
		d := &decision{since: now.Truncate(time.Second), observed: now}
		e.records[p] = d
		changes = append(changes, l.decide(c.name, p, d))
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
	var changes []change
	var freed []netip.Prefix
	for _, p := range sortedPrefixes(e.records) {
		if l.drop(name, p, e.records[p]) {
			freed = append(freed, p)
			changes = append(changes, change{kind: changeReleased, claim: name, prefix: p})
		}
	}
	return append(changes, l.promote(freed)...)
}

// drop takes a record out of the indexes and reports whether it was held.
func (l *ledger) drop(name string, p netip.Prefix, d *decision) bool {
	if d.allocated {
		l.held.Delete(p, name)
		return true
	}
	l.waiting.Delete(p, name)
	return false
}

// decide allocates a record or makes it wait.
func (l *ledger) decide(name string, p netip.Prefix, d *decision) change {
	if holder, holderPrefix, blocked := l.blocker(name, p); blocked {
		d.holder, d.holderPrefix = holder, holderPrefix
		l.waiting.Insert(p, name)
		return change{kind: changeUnavailable, claim: name, prefix: p, holder: holder, holderPrefix: holderPrefix}
	}
	l.allocate(name, p, d)
	return change{kind: changeAllocated, claim: name, prefix: p}
}

func (l *ledger) allocate(name string, p netip.Prefix, d *decision) {
	d.allocated, d.holder, d.holderPrefix = true, "", netip.Prefix{}
	l.held.Insert(p, name)
}

// blocker returns the first allocation of another claim that overlaps p,
// least specific first, so that the message names the widest holder.
func (l *ledger) blocker(name string, p netip.Prefix) (string, netip.Prefix, bool) {
	for q, holder := range l.held.Overlapping(p) {
		if holder != name {
			return holder, q, true
		}
	}
	return "", netip.Prefix{}, false
}

// promote reconsiders, first come first served, the records waiting for a
// prefix that overlaps one just freed.
func (l *ledger) promote(freed []netip.Prefix) []change {
	type waiter struct {
		claim  string
		prefix netip.Prefix
	}
	seen := map[waiter]bool{}
	var waiters []waiter
	for _, f := range freed {
		for p, claim := range l.waiting.Overlapping(f) {
			w := waiter{claim, p}
			if !seen[w] {
				seen[w] = true
				waiters = append(waiters, w)
			}
		}
	}
	slices.SortFunc(waiters, func(a, b waiter) int {
		return l.compareWaiting(a.claim, a.prefix, b.claim, b.prefix)
	})
	var changes []change
	for _, w := range waiters {
		d := l.claims[w.claim].records[w.prefix]
		holder, holderPrefix, blocked := l.blocker(w.claim, w.prefix)
		switch {
		case !blocked:
			l.waiting.Delete(w.prefix, w.claim)
			l.allocate(w.claim, w.prefix, d)
			d.since = l.stamp()
			changes = append(changes, change{kind: changeAllocated, claim: w.claim, prefix: w.prefix})
		case holder != d.holder || holderPrefix != d.holderPrefix:
			d.holder, d.holderPrefix = holder, holderPrefix
			changes = append(changes, change{kind: changeBlocker, claim: w.claim, prefix: w.prefix, holder: holder, holderPrefix: holderPrefix})
		}
	}
	return changes
}

// compareWaiting orders waiting records: who waits longer first, then the
// older claim, then by name and prefix, so that ties resolve the same way
// every time.
func (l *ledger) compareWaiting(claimA string, a netip.Prefix, claimB string, b netip.Prefix) int {
	ea, eb := l.claims[claimA], l.claims[claimB]
	return cmp.Or(
		ea.records[a].since.Compare(eb.records[b].since),
		ea.created.Compare(eb.created),
		cmp.Compare(claimA, claimB),
		a.Compare(b),
	)
}

// restore replaces the ledger with one rebuilt from the claims' status:
// recorded allocations stand, then records waiting (by their recorded
// date) and undecided records (from now) are decided first come, first
// served. Should status ever hold overlapping allocations, the earlier one
// stands and the other is decided again.
func (l *ledger) restore(claims []claimSpec) []change {
	l.held, l.waiting = prefixindex.Index[string]{}, prefixindex.Index[string]{}
	l.claims = map[string]*claimEntry{}
	type pending struct {
		claim  string
		prefix netip.Prefix
	}
	var recorded, undecided []pending
	// Records whose status already says they wait, as recorded: deciding
	// them again the same way is no news.
	waited := map[pending]recordedStatus{}
	now := l.now()
	for _, c := range claims {
		e := &claimEntry{uid: c.uid, created: c.created, generation: c.generation, records: map[netip.Prefix]*decision{}}
		l.claims[c.name] = e
		for _, p := range c.prefixes {
			d := &decision{since: now.Truncate(time.Second)}
			e.records[p] = d
			r, ok := c.recorded[p]
			switch {
			case ok && r.allocated:
				d.since = r.date
				recorded = append(recorded, pending{c.name, p})
			case ok:
				d.since = r.date
				waited[pending{c.name, p}] = r
				undecided = append(undecided, pending{c.name, p})
			default:
				d.observed = now
				undecided = append(undecided, pending{c.name, p})
			}
		}
	}
	byAge := func(a, b pending) int { return l.compareWaiting(a.claim, a.prefix, b.claim, b.prefix) }
	slices.SortFunc(recorded, byAge)
	for _, r := range recorded {
		d := l.claims[r.claim].records[r.prefix]
		if _, _, blocked := l.blocker(r.claim, r.prefix); blocked {
			d.since = now.Truncate(time.Second)
			undecided = append(undecided, r)
			continue
		}
		l.allocate(r.claim, r.prefix, d)
	}
	// Records that waited before the restart go first, whatever the clocks
	// of earlier leaders said, then the ones nobody decided yet.
	slices.SortFunc(undecided, func(a, b pending) int {
		_, waitedA := waited[a]
		_, waitedB := waited[b]
		if waitedA != waitedB {
			if waitedA {
				return -1
			}
			return 1
		}
		return byAge(a, b)
	})
	var changes []change
	for _, u := range undecided {
		d := l.claims[u.claim].records[u.prefix]
		r, wasWaiting := waited[u]
		if wasWaiting && l.stillBlocks(u.claim, u.prefix, r.holder, r.holderPrefix) {
			// The holder its status names still blocks it: keep the
			// message, rather than name another holder after a restart.
			d.holder, d.holderPrefix = r.holder, r.holderPrefix
			l.waiting.Insert(u.prefix, u.claim)
			continue
		}
		c := l.decide(u.claim, u.prefix, d)
		if c.kind == changeAllocated {
			d.since = now.Truncate(time.Second)
		} else if wasWaiting {
			continue
		}
		changes = append(changes, c)
	}
	return changes
}

// stillBlocks reports whether holder, another claim, holds holderPrefix and
// it overlaps p.
func (l *ledger) stillBlocks(claim string, p netip.Prefix, holder string, holderPrefix netip.Prefix) bool {
	return holder != "" && holder != claim && holderPrefix.IsValid() && holderPrefix.Overlaps(p) &&
		slices.Contains(l.held.Holders(holderPrefix), holder)
}

// records returns the ledger's decisions for a claim at the generation it
// last synced, or false if it does not know the claim (of that uid).
func (l *ledger) records(name string, uid types.UID) (int64, map[netip.Prefix]decision, bool) {
	e, ok := l.claims[name]
	if !ok || e.uid != uid {
		return 0, nil, false
	}
	out := make(map[netip.Prefix]decision, len(e.records))
	for p, d := range e.records {
		out[p] = *d
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
	for _, d := range e.records {
		if !d.observed.IsZero() {
			observed = append(observed, d.observed)
			d.observed = time.Time{}
		}
	}
	return observed
}

// counts returns the number of allocated and waiting records.
func (l *ledger) counts() (allocated, waiting int) {
	return l.held.Len(), l.waiting.Len()
}

func sortedPrefixes(records map[netip.Prefix]*decision) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(records))
	for p := range records {
		out = append(out, p)
	}
	slices.SortFunc(out, netip.Prefix.Compare)
	return out
}
