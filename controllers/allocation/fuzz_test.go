package allocation

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// FuzzLedger plays the history the fuzz input spells: claims created,
// changed (records added, dropped, made delegable or not), sent again at
// an old generation, deleted, deleted and created again under the same
// name; their status written as the controller writes it, past the write
// fence; and the ledger rebuilt from the status stored, as a new leader
// does. Claims hold exact prefixes, sub-prefixes taken from other claims
// and pool records, in small regions of both families (their first and
// last addresses among them) where they collide often. Each claim passes
// the API server's validation and is parsed as the controller parses it.
//
// After every step the ledger keeps what it promises (checkLedger): no two
// allocations overlap outside a delegation chain; a waiting record truly
// waits; pool records got the lowest free prefix; allocations are sticky;
// a restore from status changes nothing. So do the stored statuses: none
// shows an allocation that overlaps another's outside a delegation chain,
// not even between a release and the write that records it. The status
// the controller writes validates, and a new leader that reads it back,
// up to date, rebuilds the same book. The corpus is in
// testdata/fuzz/FuzzLedger.
func FuzzLedger(f *testing.F) {
	const a, b, c, d = 0, 1, 2, 3
	for _, seed := range [][]byte{
		// a delegates 10.0.0.0/22; b takes a /24 from it, first fit; c
		// claims a sub-prefix of it; d an exact prefix inside it, which
		// conflicts until a is deleted (b and c keep theirs).
		join(syncOp(a, exactRec(true, 0, 22, 0)),
			syncOp(b, poolRec(false, a, 0, 24)),
			syncOp(c, subRec(a, 0, 24, 0x100)),
			syncOp(d, exactRec(false, 0, 24, 0x200)),
			forgetOp(a)),
		// Pools at the end of IPv4 and of IPv6, filled to their last
		// address, and a waiter when they are full.
		join(syncOp(a, exactRec(true, 2, 23, 0x200), exactRec(true, 4, 119, 0x200)),
			syncOp(b, poolRec(false, a, 2, 24), poolRec(false, a, 4, 120)),
			syncOp(c, poolRec(false, a, 2, 24), pinnedRec(false, a, 4, 120, 1)),
			syncOp(d, poolRec(false, a, 2, 24)),
			forgetOp(b)),
		// Delegation three deep, its status written; the middle claim
		// deleted and created again under another uid, the next one
		// deleted, a restore from status that lags.
		join(syncOp(a, exactRec(true, 1, 22, 0)),
			syncOp(b, poolRec(true, a, 1, 23)),
			syncOp(c, poolRec(true, b, 1, 24)),
			syncOp(d, poolRec(false, c, 1, 26), subRec(c, 1, 27, 0x40)),
			writeAllOp(), recreateOp(b), forgetOp(c), writeOp(d), restoreOp()),
		// A pool made not delegable and delegable again, an old
		// generation delivered late, a restore from up-to-date status, and
		// edits after it.
		join(syncOp(a, exactRec(true, 3, 118, 0), exactRec(false, 0, 30, 0)),
			syncOp(b, poolRec(false, a, 3, 120)),
			editOp(a, 0, toggle),
			syncOp(c, poolRec(false, a, 3, 120)),
			editOp(a, 0, toggle),
			staleOp(a, exactRec(false, 0, 24, 0)),
			writeAllOp(), restoreOp(),
			editOp(b, 0, add, poolRec(true, a, 3, 121)),
			editOp(a, 1, drop)),
		// a moves off the prefix b waits for: b is promoted at once, but
		// its status is written only once a's release is, so that no two
		// stored statuses show the same space.
		join(syncOp(a, exactRec(false, 0, 24, 0)),
			syncOp(b, exactRec(false, 0, 25, 0)),
			writeAllOp(),
			syncOp(a, exactRec(false, 0, 24, 0x100)),
			writeOp(b), writeOp(a), writeOp(b), restoreOp()),
		// A pool with a reservation and a 2 s grace period: first fit
		// skips both, a release cools, a restore reads the cooling
		// list back, and the clock ends the grace period.
		join(syncOp(a, exactRec(true, 0, 22, 0)),
			policyOp(a, 0, 2, reservation(22, 24, 0x100)),
			syncOp(b, poolRec(false, a, 0, 24)),
			syncOp(c, poolRec(false, a, 0, 24)),
			forgetOp(b),
			syncOp(d, poolRec(false, a, 0, 24)),
			writeAllOp(), restoreOp(),
			clockOp(3),
			syncOp(b, poolRec(false, a, 0, 24))),
	} {
		f.Add(seed)
	}
	f.Fuzz(playHistory)
}

// playHistory plays the history data spells and checks the ledger after
// every step.
func playHistory(t *testing.T, data []byte) {
	h := history{in: data, now: t0, claims: map[string]*networkingv1alpha1.NetworkClaim{}, uids: map[string]int{},
		writtenFrom: map[string]map[networkingv1alpha1.RecordKey]string{}}
	h.l = newLedger(h.clock)
	for step := 0; step < maxFuzzSteps && len(h.in) > 0; step++ {
		before, cooling := heldBy(h.l), maps.Clone(h.l.cooling)
		desc, changes, problem := h.step()
		if desc == "" {
			continue // a claim the API server would refuse
		}
		h.log = append(h.log, fmt.Sprintf("%s → %q", desc, formatChanges(changes)))
		where := fmt.Sprintf("step %d (%s)", step, desc)
		if problem != "" {
			t.Errorf("%s: %s", where, problem)
		}
		checkLedger(t, where, h.l, before, changes)
		checkPolicies(t, where, h.l, cooling, changes)
		checkOverlaps(t, where+", as stored", h.storedHeld())
		if t.Failed() {
			t.Fatalf("history:\n%s", strings.Join(h.log, "\n"))
		}
	}
}

// maxFuzzSteps bounds a history, so that an input's run stays short.
const maxFuzzSteps = 32

// fuzzClaims are the claims of a history: few, so that they meet.
var fuzzClaims = []string{"a", "b", "c", "d"}

// fuzzRegions are where a history's prefixes lie, each a /22 of IPv4 or a
// /118 of IPv6 (1,024 addresses): the first and last addresses of each
// family, where first fit meets the family's ends, and one in between.
var fuzzRegions = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/22"),
	netip.MustParsePrefix("0.0.0.0/22"),
	netip.MustParsePrefix("255.255.252.0/22"),
	netip.MustParsePrefix("fd00::/118"),
	netip.MustParsePrefix("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fc00/118"),
	netip.MustParsePrefix("::/118"),
}

// history reads operations from fuzz input and plays them on a ledger.
type history struct {
	in []byte
	l  *ledger
	rv uint64
	// now is the ledger's clock, which the history moves on.
	now time.Time
	// claims are the claims as stored: the spec last synced, the status
	// last written; uids counts the times each was created.
	claims map[string]*networkingv1alpha1.NetworkClaim
	uids   map[string]int
	// writtenFrom is, for each status record stored, the claim its spec
	// record was taken from when the status was written: a record's
	// status stays after the record leaves the spec, until the next write.
	writtenFrom map[string]map[networkingv1alpha1.RecordKey]string
	log         []string
}

// next reads a byte; past the end of the input it reads zeros, so that
// every input spells a history.
func (h *history) next() byte {
	if len(h.in) == 0 {
		return 0
	}
	b := h.in[0]
	h.in = h.in[1:]
	return b
}

func (h *history) intn(n int) int { return int(h.next()) % n }

func (h *history) clock() time.Time { return h.now }

// step plays one operation. It returns what it did ("" for a claim that
// does not validate, which the ledger never sees), the ledger's changes,
// and what went wrong that checkLedger does not see.
func (h *history) step() (string, []change, string) {
	name := fuzzClaims[h.intn(len(fuzzClaims))]
	switch op := h.intn(12); op {
	case 0, 1, 2:
		var records []networkingv1alpha1.AddressSpaceRecord
		for i := range 1 + h.intn(3) {
			records = append(records, h.record(name, i))
		}
		return h.sync(name, records)
	case 3:
		// An edit of the claim's spec: a record more, one less, or one
		// made delegable or not.
		records := h.records(name)
		if len(records) == 0 {
			return "", nil, ""
		}
		i := h.intn(len(records))
		switch h.intn(3) {
		case 0:
			records = append(records, h.record(name, len(records)+h.intn(4)))
		case 1:
			records = slices.Delete(records, i, i+1)
		case 2:
			records[i].Delegable = !records[i].Delegable
		}
		return h.sync(name, records)
	case 4:
		// As the controller does when the claim leaves its cache.
		delete(h.claims, name)
		delete(h.writtenFrom, name)
		h.uids[name]++ // created again, it is another object
		h.l.recordStored(name, nil)
		return "forget " + name, h.l.forget(name, ""), ""
	case 5:
		// Deleted and created again: the ledger learns of it by the new
		// uid, with the same spec.
		records := h.records(name)
		if len(records) == 0 {
			return "", nil, ""
		}
		h.uids[name]++
		return h.sync(name, records)
	case 6:
		// The spec of an older generation, delivered late: nothing
		// changes.
		e, ok := h.l.claims[name]
		if !ok {
			return "", nil, ""
		}
		claim := h.spec(name, []networkingv1alpha1.AddressSpaceRecord{h.record(name, 0)})
		if claim == nil {
			return "", nil, ""
		}
		s := specOf(context.Background(), claim)
		s.generation = e.generation - int64(h.intn(2))
		before := state(h.l)
		changes := h.l.sync(s)
		var problem string
		if after := state(h.l); len(changes) > 0 || !maps.Equal(before, after) {
			problem = fmt.Sprintf("an old generation changed the ledger:\n%s", diff.Diff(before, after))
		}
		return fmt.Sprintf("stale %s at generation %d", name, s.generation), changes, problem
	case 7:
		if h.claims[name] == nil {
			return "", nil, ""
		}
		desc, problem := h.write(name)
		return desc, nil, problem
	case 8:
		// Every status worker catches up, in name order.
		var descs, problems []string
		for _, name := range slices.Sorted(maps.Keys(h.claims)) {
			desc, problem := h.write(name)
			descs = append(descs, desc)
			if problem != "" {
				problems = append(problems, problem)
			}
		}
		return "[" + strings.Join(descs, ", ") + "]", nil, strings.Join(problems, "; ")
	case 9:
		return h.restore()
	case 10:
		// A pool policy set, changed or removed: reservations and a
		// reuse grace period, which the kept figures count.
		records := h.records(name)
		if len(records) == 0 {
			return "", nil, ""
		}
		i := h.intn(len(records))
		records[i].Pool = h.policy(records[i])
		if records[i].Pool != nil {
			records[i].Delegable = true
		}
		return h.sync(name, records)
	default:
		// The clock moves on a few seconds: grace periods end.
		h.now = h.now.Add(time.Duration(h.intn(4)) * time.Second)
		return "clock " + h.now.Format(time.TimeOnly), h.l.expire(), ""
	}
}

// policy reads a pool policy for record r, nil for none: a reuse grace
// period of up to 3 s, and up to two disjoint reservations strictly inside
// r's prefix when its spec names one.
func (h *history) policy(r networkingv1alpha1.AddressSpaceRecord) *networkingv1alpha1.PoolPolicy {
	if h.intn(4) == 0 {
		return nil
	}
	p := &networkingv1alpha1.PoolPolicy{}
	if grace := int64(h.intn(4)); grace > 0 {
		p.ReuseGracePeriodSeconds = &grace
	}
	prefix, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return p
	}
	var reserved []netip.Prefix
	for range h.intn(3) {
		// The record's address with random low bits (the regions'
		// 10), cut a little longer than the record.
		bits := min(prefix.Bits()+1+h.intn(4), prefix.Addr().BitLen())
		b := prefix.Addr().As16()
		b[14] |= h.next() & 0x03
		b[15] |= h.next()
		addr := netip.AddrFrom16(b)
		if prefix.Addr().Is4() {
			addr = addr.Unmap()
		}
		q := netip.PrefixFrom(addr, bits).Masked()
		if q.Bits() > prefix.Bits() && prefix.Contains(q.Addr()) && !slices.ContainsFunc(reserved, q.Overlaps) {
			reserved = append(reserved, q)
			p.Reservations = append(p.Reservations, networkingv1alpha1.PoolReservation{Prefix: q.String()})
		}
	}
	return p
}

// write writes the claim's status as the controller's status worker does,
// unless the write fence holds it back, and delivers it to the ledger as
// the informer does.
func (h *history) write(name string) (desc, problem string) {
	claim := h.claims[name]
	generation, decisions, known := h.l.records(name, claim.UID)
	if !known || generation != claim.Generation {
		return "write " + name + ": the ledger has another generation", "the ledger did not sync the claim as stored"
	}
	if h.l.fenced(name, newlyAllocated(claim, decisions)) {
		return "write " + name + ": waits for a release to be stored", ""
	}
	written := claim.DeepCopy()
	written.Status = desiredStatus(claim, generation, decisions)
	if errs := validateStatus(written, claim); len(errs) > 0 {
		problem = fmt.Sprintf("the status written to %s does not validate: %v", name, errs.ToAggregate())
	}
	h.claims[name] = written
	h.writtenFrom[name] = map[networkingv1alpha1.RecordKey]string{}
	for _, d := range networkregistry.Decisions(written) {
		if d.Status != nil && d.Record.From != nil {
			h.writtenFrom[name][d.Status.Key()] = d.Record.From.Claim
		}
	}
	h.l.recordStored(name, storedAllocations(written))
	return "write " + name, problem
}

// restore is a new leader's start: the ledger rebuilt from the status
// stored, read back as the controller reads it, and the write fence from
// what it shows. When every status shows the ledger's decisions, the book
// rebuilt must be the same, with nothing decided anew.
func (h *history) restore() (string, []change, string) {
	var specs []claimSpec
	var problems []string
	restored := newLedger(h.clock)
	upToDate := true
	for _, name := range slices.Sorted(maps.Keys(h.claims)) {
		claim := h.claims[name]
		generation, decisions, ok := h.l.records(name, claim.UID)
		if !ok {
			problems = append(problems, fmt.Sprintf("the ledger does not know claim %s %s", name, claim.UID))
			continue
		}
		// Conditions aside: their times are the clock's.
		want := desiredStatus(claim, generation, decisions)
		if claim.Status.ObservedGeneration != want.ObservedGeneration || !apiequality.Semantic.DeepEqual(claim.Status.AddressSpace, want.AddressSpace) {
			upToDate = false
		}
		s := specOf(context.Background(), claim)
		s.recorded = recordedOf(claim, s.records)
		specs = append(specs, s)
		restored.recordStored(name, storedAllocations(claim))
	}
	changes := restored.restore(specs)
	if upToDate {
		if len(changes) > 0 {
			problems = append(problems, fmt.Sprintf("a restore from up-to-date status decided anew: %q", formatChanges(changes)))
		}
		if before, after := state(h.l), state(restored); !maps.Equal(before, after) {
			problems = append(problems, fmt.Sprintf("the ledger rebuilt from up-to-date status differs (-before +after):\n%s", diff.Diff(before, after)))
		}
	}
	h.l = restored
	desc := "restore"
	if upToDate {
		desc += " from up-to-date status"
	}
	return desc, changes, strings.Join(problems, "; ")
}

// validateStatus validates a status write as the API server does.
func validateStatus(claim, old *networkingv1alpha1.NetworkClaim) field.ErrorList {
	var internal, internalOld networking.NetworkClaim
	for _, c := range []struct {
		in  *networkingv1alpha1.NetworkClaim
		out *networking.NetworkClaim
	}{{claim, &internal}, {old, &internalOld}} {
		if err := networkingv1alpha1.Convert_v1alpha1_NetworkClaim_To_networking_NetworkClaim(c.in, c.out, nil); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
	}
	return validation.ValidateNetworkClaimStatusUpdate(&internal, &internalOld)
}

// storedHeld maps a record made up for each allocation that the stored
// statuses show, in spec or not, to its prefix, taken from the claim its
// spec record named when the status was written.
func (h *history) storedHeld() map[*record]netip.Prefix {
	held := map[*record]netip.Prefix{}
	for name, claim := range h.claims {
		for _, s := range claim.Status.AddressSpace {
			p, err := netip.ParsePrefix(s.Prefix)
			if s.Status != networkingv1alpha1.AllocationAllocated || err != nil {
				continue
			}
			held[&record{claim: name, recordSpec: recordSpec{key: s.Key(), req: request{from: h.writtenFrom[name][s.Key()], length: -1}}}] = p
		}
	}
	return held
}

// records returns a copy of the records of the claim as last synced.
func (h *history) records(name string) []networkingv1alpha1.AddressSpaceRecord {
	if c := h.claims[name]; c != nil {
		return slices.Clone(c.Spec.AddressSpace)
	}
	return nil
}

// sync validates the claim as the API server would, and syncs the ledger
// with it as the controller does.
func (h *history) sync(name string, records []networkingv1alpha1.AddressSpaceRecord) (string, []change, string) {
	claim := h.spec(name, records)
	if claim == nil {
		return "", nil, ""
	}
	s := specOf(context.Background(), claim)
	if e, ok := h.l.claims[name]; ok && e.uid == claim.UID {
		s.generation = e.generation + 1
	}
	claim.Generation = s.generation
	if old := h.claims[name]; old != nil && old.UID == claim.UID {
		claim.Status = old.Status // a spec write keeps the status
	} else {
		delete(h.writtenFrom, name)
	}
	h.claims[name] = claim
	// As the controller does with what its cache holds: the status
	// stored, then the spec.
	h.l.recordStored(name, storedAllocations(claim))
	desc := make([]string, 0, len(s.records))
	for _, r := range s.records {
		desc = append(desc, r.String())
	}
	return fmt.Sprintf("sync %s %s %v", name, claim.UID, desc), h.l.sync(s), ""
}

// spec builds the claim at the next resourceVersion, or nil if it does not
// validate.
func (h *history) spec(name string, records []networkingv1alpha1.AddressSpaceRecord) *networkingv1alpha1.NetworkClaim {
	h.rv++
	claim := &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			UID:             types.UID(name + "-uid-" + strconv.Itoa(h.uids[name])),
			Generation:      1,
			ResourceVersion: strconv.FormatUint(h.rv, 10),
		},
		Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: records},
	}
	var internal networking.NetworkClaim
	if err := networkingv1alpha1.Convert_v1alpha1_NetworkClaim_To_networking_NetworkClaim(claim, &internal, nil); err != nil {
		return nil
	}
	if errs := validation.ValidateNetworkClaim(&internal); len(errs) > 0 {
		return nil
	}
	return claim
}

// record reads a record of claim self: an exact prefix, a sub-prefix
// taken from another claim, or a pool record, delegable or not.
func (h *history) record(self string, i int) networkingv1alpha1.AddressSpaceRecord {
	r := networkingv1alpha1.AddressSpaceRecord{Delegable: h.next()&1 == 1}
	from := fuzzClaims[h.intn(len(fuzzClaims))]
	kind := h.intn(4)
	if from == self {
		kind = 0
	}
	switch kind {
	case 0:
		r.Prefix = h.prefix().String()
	case 1:
		r.Prefix = h.prefix().String()
		r.From = &networkingv1alpha1.PrefixSource{Claim: from}
	default:
		// Named, as a pool record must be; its length in the family
		// of a region.
		r.Name = "r" + strconv.Itoa(i)
		region := fuzzRegions[h.intn(len(fuzzRegions))]
		length := int32(region.Bits() + h.intn(11))
		r.PrefixLength = &length
		r.From = &networkingv1alpha1.PrefixSource{Claim: from}
		if kind == 3 {
			// Pinned to one of the source claim's records, if it has any.
			if pools := h.records(from); len(pools) > 0 {
				r.From.Prefix = pools[h.intn(len(pools))].Prefix
			}
		}
	}
	return r
}

// prefix reads a prefix inside one of the regions.
func (h *history) prefix() netip.Prefix {
	region := fuzzRegions[h.intn(len(fuzzRegions))]
	bits := region.Bits() + h.intn(11)
	offset := uint16(h.next())<<8 | uint16(h.next())
	b := region.Addr().As16()
	b[14] |= byte(offset>>8) & 0x03
	b[15] |= byte(offset)
	addr := netip.AddrFrom16(b)
	if region.Addr().Is4() {
		addr = addr.Unmap()
	}
	return netip.PrefixFrom(addr, bits).Masked()
}

// The fuzz input's spelling, for the seeds: each function writes the
// bytes that history reads back.

func join(ops ...[]byte) []byte { return slices.Concat(ops...) }

func syncOp(claim int, records ...[]byte) []byte {
	return slices.Concat([]byte{byte(claim), 0, byte(len(records) - 1)}, slices.Concat(records...))
}

type edit byte

const (
	add edit = iota
	drop
	toggle
)

// editOp adds a record after the claim's last, drops the i-th or toggles
// its delegable.
func editOp(claim, i int, e edit, added ...[]byte) []byte {
	op := []byte{byte(claim), 3, byte(i), byte(e)}
	if e == add {
		op = append(op, 0)
	}
	return slices.Concat(op, slices.Concat(added...))
}

// policyOp gives the claim's i-th record a pool policy: a grace period
// of seconds and the reservations.
func policyOp(claim, i, seconds int, reservations ...[]byte) []byte {
	return slices.Concat([]byte{byte(claim), 10, byte(i), 1, byte(seconds), byte(len(reservations))}, slices.Concat(reservations...))
}

// reservation is a reservation of length bits (one to four longer than
// the record's, recordBits) at offset inside the record.
func reservation(recordBits, bits int, offset uint16) []byte {
	return []byte{byte(bits - recordBits - 1), byte(offset >> 8), byte(offset)}
}

func clockOp(seconds int) []byte { return []byte{0, 11, byte(seconds)} }

func forgetOp(claim int) []byte   { return []byte{byte(claim), 4} }
func recreateOp(claim int) []byte { return []byte{byte(claim), 5} }
func writeOp(claim int) []byte    { return []byte{byte(claim), 7} }
func writeAllOp() []byte          { return []byte{0, 8} }
func restoreOp() []byte           { return []byte{0, 9} }

// staleOp sends the claim again with record at the generation the ledger
// has.
func staleOp(claim int, record []byte) []byte {
	return slices.Concat([]byte{byte(claim), 6}, record, []byte{0})
}

// exactRec is the prefix of the given length at offset in region.
func exactRec(delegable bool, region, bits int, offset uint16) []byte {
	return append([]byte{flag(delegable), 0, 0}, prefixBytes(region, bits, offset)...)
}

// subRec is the prefix of the given length at offset in region, taken
// from claim from.
func subRec(from, region, bits int, offset uint16) []byte {
	return append([]byte{0, byte(from), 1}, prefixBytes(region, bits, offset)...)
}

// poolRec asks claim from for a prefix of the given length, in the family
// of region.
func poolRec(delegable bool, from, region, length int) []byte {
	return []byte{flag(delegable), byte(from), 2, byte(region), byte(length - fuzzRegions[region].Bits())}
}

// pinnedRec is a poolRec pinned to claim from's pool-th record.
func pinnedRec(delegable bool, from, region, length, pool int) []byte {
	return []byte{flag(delegable), byte(from), 3, byte(region), byte(length - fuzzRegions[region].Bits()), byte(pool)}
}

func prefixBytes(region, bits int, offset uint16) []byte {
	return []byte{byte(region), byte(bits - fuzzRegions[region].Bits()), byte(offset >> 8), byte(offset)}
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}
