package allocation

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// ledger is the registry's book of who holds which prefix. It decides every
// record, in memory and in the order it learns of them, so that decisions
// are serialized without touching the API; the controller then writes them
// to each claim's status, and the ledger's write fence says when a write
// may go. It is not safe for concurrent use.
//
// Its concerns have a file each: this one keeps the book (claims, records,
// the prefix indexes) and what the controller asks of it; spec.go reads a
// claim into records; rules.go says what a record may get and what it
// conflicts with; pools.go fills pools first fit; restore.go rebuilds the
// book from status; fence.go holds the write fence.
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

	// full marks how far each pool is taken from its start, so that first
	// fit does not walk the taken part again (pools.go).
	full map[*record]fullMark
	// cooling holds each pool's released sub-prefixes in their reuse
	// grace period, soonest reusable first (cooling.go).
	cooling map[*record][]cooled
	// coolingSpans are the same prefixes in address order (setCooling),
	// for the searches of the pool's figures and first fit. A pool's
	// cooling prefixes never overlap: a release takes the ones it
	// overlaps off the list, and a restore keeps no overlapping ones.
	coolingSpans map[*record][]netip.Prefix
	// figures are each allocated pool's counts, kept as records come
	// and go inside it; changedPools names the claims whose pools changed
	// since the controller last asked (usage.go).
	figures      map[*record]*poolCounts
	changedPools map[string]bool

	// fence says when a decision may be written (fence.go).
	fence fence
}

// claimEntry is the ledger's view of one claim.
type claimEntry struct {
	uid        types.UID
	generation int64
	records    map[networkingv1alpha1.RecordKey]*record
	// order is the spec's order of the records, in which a claim's
	// delegable prefixes are tried as pools.
	order []networkingv1alpha1.RecordKey
}

// record is one spec record, as parsed, and the ledger's decision on it.
type record struct {
	claim string
	recordSpec

	allocated bool
	// prefix is the allocated prefix; for a waiting record that names its
	// prefix, the prefix it waits for.
	prefix netip.Prefix
	// reason says why a record waits; holder the allocation that blocks it
	// (Conflict), or the pool searched or asked for (PoolExhausted,
	// PoolNotFound; holder.prefix may be invalid).
	reason string
	holder holding
	// detail is the message of a record waiting for a reason that a
	// holder does not explain (PoolPolicy, ReuseGracePeriod).
	detail string

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

// decision is a copy of a record, with the delegation step of an
// allocated record, for status writes.
type decision struct {
	record
	parent holding
	// pool is an allocated delegable record's utilization.
	pool *networkingv1alpha1.PoolStatus
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
	key    networkingv1alpha1.RecordKey
	prefix netip.Prefix
	reason string
	holder holding
	length int
	detail string
	// delegable: the record is a pool.
	delegable bool
}

func newLedger(now func() time.Time) *ledger {
	return &ledger{
		now:          now,
		claims:       map[string]*claimEntry{},
		waitingFrom:  map[string]map[*record]bool{},
		full:         map[*record]fullMark{},
		cooling:      map[*record][]cooled{},
		coolingSpans: map[*record][]netip.Prefix{},
		figures:      map[*record]*poolCounts{},
		changedPools: map[string]bool{},
		fence:        fence{storedBy: map[string][]netip.Prefix{}},
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
		e = &claimEntry{uid: c.uid, records: map[networkingv1alpha1.RecordKey]*record{}}
		l.claims[c.name] = e
	}
	e.generation = c.generation
	inSpec := map[networkingv1alpha1.RecordKey]recordSpec{}
	e.order = e.order[:0]
	for _, rs := range c.records {
		inSpec[rs.key] = rs
		e.order = append(e.order, rs.key)
	}
	var freed []*record
	var delegated []string
	for _, k := range sortedKeys(e.records) {
		r := e.records[k]
		rs, ok := inSpec[k]
		if ok && rs.req.sameSpace(r.req) {
			if (rs.req.delegable != r.req.delegable || !rs.policy.equal(r.policy)) && r.allocated {
				// A pool more or less, or one with other rules: its
				// claim's waiters wait differently now.
				delegated = append(delegated, c.name)
				delete(l.full, r)
				l.poolChanged(r)
				if !rs.req.delegable {
					l.dropCooling(r) // no pool, nothing to rest
				}
				r.recordSpec = rs
				// Other reservations, or a pool more or less: count
				// it again, once.
				delete(l.figures, r)
				if r.req.delegable {
					l.startCounting(r)
				}
				continue
			}
			r.recordSpec = rs
			continue
		}
		if l.drop(r) {
			freed = append(freed, r)
			changes = append(changes, change{kind: changeReleased, claim: c.name, key: k, prefix: r.prefix, delegable: r.req.delegable})
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
		r := &record{claim: c.name, recordSpec: rs, seq: c.resourceVersion, since: now.Truncate(time.Second), observed: now}
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
			changes = append(changes, change{kind: changeReleased, claim: name, key: k, prefix: r.prefix, delegable: r.req.delegable})
		}
	}
	return append(changes, l.promote(l.candidates(freed, nil))...)
}

// drop takes a record out of the indexes and reports whether it was held.
func (l *ledger) drop(r *record) bool {
	if r.allocated {
		l.cool(r)
		l.held.Delete(r.prefix, r)
		l.countAllocation(r, r.prefix, -1)
		delete(l.full, r)
		l.dropCooling(r)
		delete(l.figures, r)
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

func (l *ledger) allocate(r *record, p netip.Prefix) {
	r.allocated, r.prefix, r.reason, r.holder, r.detail = true, p, "", holding{}, ""
	l.countAllocation(r, p, 1)
	l.held.Insert(p, r)
	l.poolsAround(p)
	if r.req.delegable {
		l.startCounting(r)
		l.poolChanged(r)
	}
}

// wait makes a record wait for a reason a holder explains.
func (l *ledger) wait(r *record, p netip.Prefix, reason string, holder holding) change {
	return l.waitBecause(r, p, reason, holder, "")
}

// waitBecause makes a record wait, with a message of its own (detail) when
// not empty.
func (l *ledger) waitBecause(r *record, p netip.Prefix, reason string, holder holding, detail string) change {
	r.allocated, r.prefix, r.reason, r.holder, r.detail = false, p, reason, holder, detail
	if p.IsValid() {
		l.waiting.Insert(p, r)
	}
	if r.req.from != "" {
		if l.waitingFrom[r.req.from] == nil {
			l.waitingFrom[r.req.from] = map[*record]bool{}
		}
		l.waitingFrom[r.req.from][r] = true
	}
	return change{kind: changeUnavailable, claim: r.claim, key: r.key, prefix: p, reason: reason, holder: holder, length: r.req.length, detail: detail}
}

// records returns the ledger's decisions for a claim at the generation it
// last synced, in spec order, or false if it does not know the claim (of
// that uid).
func (l *ledger) records(name string, uid types.UID) (int64, []decision, bool) {
	e, ok := l.claims[name]
	if !ok || e.uid != uid {
		return 0, nil, false
	}
	out := make([]decision, 0, len(e.order))
	for _, k := range e.order {
		r := e.records[k]
		d := decision{record: *r}
		if r.allocated {
			if parent := l.parentFor(r.req, r.prefix, false); parent != nil {
				d.parent = holding{claim: parent.claim, prefix: parent.prefix}
			}
			if r.req.delegable {
				d.pool = poolStatus(l.usageOf(r), l.cooling[r])
			}
		}
		out = append(out, d)
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

// uidOf returns the uid of the claim the ledger knows by that name.
func (l *ledger) uidOf(name string) (types.UID, bool) {
	e, ok := l.claims[name]
	if !ok {
		return "", false
	}
	return e.uid, true
}

// counts returns the number of allocated and waiting records.
func (l *ledger) counts() (allocated, waiting int) {
	return l.held.Len(), l.total - l.held.Len()
}

func sortedKeys(records map[networkingv1alpha1.RecordKey]*record) []networkingv1alpha1.RecordKey {
	out := slices.Collect(maps.Keys(records))
	slices.SortFunc(out, func(a, b networkingv1alpha1.RecordKey) int {
		return compareRecords(records[a], records[b])
	})
	return out
}

// compareRecords orders a claim's records by name, then by the prefix they
// claim in address order (parsed: as strings, 10.10.0.0/16 would come
// before 10.9.0.0/16); pool records claim none.
func compareRecords(a, b *record) int {
	return cmp.Or(strings.Compare(a.key.Name, b.key.Name), a.req.prefix.Compare(b.req.prefix))
}
