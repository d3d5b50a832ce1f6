package networkregistry

import (
	"net/netip"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// Decision is one record of a claim's spec and the registry's decision on
// it.
type Decision struct {
	// Record is the spec record: the claim's current intent.
	Record v1alpha1.AddressSpaceRecord
	// Status is the registry's decision on Record as it asks now, nil while
	// there is none: not decided yet, or decided on a request Record no
	// longer makes (its prefix, from or prefixLength changed since).
	Status *v1alpha1.AddressSpaceStatus
}

// Allocated returns the prefix the registry allocated to the record: the
// record's own prefix, or for a record taken from a pool, the one the
// registry chose. ok is false while the record is not allocated.
func (d Decision) Allocated() (prefix netip.Prefix, ok bool) {
	if d.Status == nil || d.Status.Status != v1alpha1.AllocationAllocated {
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(d.Status.Prefix)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// Decisions returns every spec record of claim, in spec order, with the
// registry's decision on it. A status record answers a spec record when it
// is about the same request:
//   - a record taken from a pool (prefixLength, no prefix) is answered by the
//     status record of the same name, whose prefix is the one the registry
//     chose; an allocated prefix of another length, outside from.prefix, or
//     delegated by another claim than from names, answers an earlier request;
//   - a record with a prefix is answered by the status record of the same
//     name and prefix, or, renamed since it was decided, by one of that
//     prefix that no pool record of the claim answers (the prefix the
//     registry chose for a pool record may be the one another record of the
//     claim asks for, and waits for), unless it names a delegating claim
//     other than the record's from.
//
// Status records that answer no spec record (released records the registry
// has not caught up with) are left out.
func Decisions(claim *v1alpha1.NetworkClaim) []Decision {
	if claim == nil {
		return nil
	}
	pools := map[string]bool{}
	for _, record := range claim.Spec.AddressSpace {
		if isPoolRecord(record) {
			pools[record.Name] = true
		}
	}
	byKey := map[v1alpha1.RecordKey]*v1alpha1.AddressSpaceStatus{}
	byName := map[string]*v1alpha1.AddressSpaceStatus{}
	byPrefix := map[netip.Prefix]*v1alpha1.AddressSpaceStatus{}
	for i := range claim.Status.AddressSpace {
		s := &claim.Status.AddressSpace[i]
		byKey[s.Key()] = s
		if s.Name != "" {
			byName[s.Name] = s
		}
		if p, err := netip.ParsePrefix(s.Prefix); err == nil && !pools[s.Name] {
			byPrefix[p.Masked()] = s
		}
	}
	out := make([]Decision, 0, len(claim.Spec.AddressSpace))
	for _, record := range claim.Spec.AddressSpace {
		d := Decision{Record: *record.DeepCopy()}
		var status *v1alpha1.AddressSpaceStatus
		switch {
		case isPoolRecord(record):
			status = byName[record.Name]
		case byKey[record.Key()] != nil:
			status = byKey[record.Key()]
		default:
			if p, err := netip.ParsePrefix(record.Prefix); err == nil {
				status = byPrefix[p.Masked()]
			}
		}
		if status != nil && answers(record, status) {
			d.Status = status.DeepCopy()
		}
		out = append(out, d)
	}
	return out
}

// AllocationsOf returns the allocations of claim, in spec order: its spec
// records that the registry allocated (see Decisions), each with the prefix
// it holds. Reference, description and delegable come from the spec record,
// the claim's current intent. This is what a Registry indexes for the
// claim; after WaitForAllocation, it gives the prefixes the registry chose
// for the records taken from pools.
func AllocationsOf(claim *v1alpha1.NetworkClaim) []Allocation {
	if claim == nil {
		return nil
	}
	return allocationsFrom(claim.Name, Decisions(claim))
}

// allocationsFrom returns the allocations among a claim's decisions.
func allocationsFrom(claim string, decisions []Decision) []Allocation {
	var out []Allocation
	for _, d := range decisions {
		p, ok := d.Allocated()
		if !ok {
			continue
		}
		a := Allocation{
			Claim:       claim,
			Name:        d.Record.Name,
			Prefix:      p,
			Reference:   d.Record.Reference,
			Description: d.Record.Description,
			Delegable:   d.Record.Delegable,
			Date:        d.Status.Date.Time,
		}
		if from := d.Status.DelegatedFrom; from != nil {
			if parent, err := netip.ParsePrefix(from.Prefix); err == nil {
				a.DelegatedFrom = &ClaimedPrefix{Claim: from.Claim, Prefix: parent.Masked()}
			}
		}
		out = append(out, a)
	}
	return out
}

// isPoolRecord reports whether the registry chooses the record's prefix.
func isPoolRecord(record v1alpha1.AddressSpaceRecord) bool {
	return record.Prefix == "" && record.PrefixLength != nil
}

// answers reports whether status, found for record by name or prefix, is
// the registry's decision on what record asks now rather than on an earlier
// request of the same name or prefix. Only an allocated status carries
// enough to tell; an unavailable one allocates nothing either way.
func answers(record v1alpha1.AddressSpaceRecord, status *v1alpha1.AddressSpaceStatus) bool {
	if status.Status != v1alpha1.AllocationAllocated {
		return true
	}
	// An orphan (its delegating allocation gone) keeps its prefix and names
	// no parent; a named parent must be the claim the record is taken from.
	if parent := status.DelegatedFrom; parent != nil && (record.From == nil || parent.Claim != record.From.Claim) {
		return false
	}
	if !isPoolRecord(record) {
		return true
	}
	p, err := netip.ParsePrefix(status.Prefix)
	if err != nil || p.Bits() != int(*record.PrefixLength) {
		return false
	}
	if record.From != nil && record.From.Prefix != "" {
		pool, err := netip.ParsePrefix(record.From.Prefix)
		if err != nil || p.Bits() < pool.Bits() || !pool.Contains(p.Addr()) {
			return false
		}
	}
	return true
}
