package allocation

import (
	"net/netip"
	"slices"

	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// fence is the ledger's write fence: it indexes the allocations that
// claims' status, as the informer last delivered it, records (in spec or
// not). A new allocation is written only once no other claim's status
// shows an overlapping allocation that the ledger no longer holds, so that
// stored statuses never overlap outside a delegation chain, not even
// between a release and the write that records it.
type fence struct {
	stored   prefixindex.Index[string]
	storedBy map[string][]netip.Prefix
}

// recordStored updates the write fence with what a claim's status now
// records, and returns the claims the ledger allocated a prefix that
// overlaps one the status no longer shows: their writes waited for it.
func (l *ledger) recordStored(name string, now []netip.Prefix) []string {
	var wake []string
	for _, p := range l.fence.storedBy[name] {
		l.fence.stored.Delete(p, name)
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
		l.fence.stored.Insert(p, name)
	}
	if len(now) == 0 {
		delete(l.fence.storedBy, name)
	} else {
		l.fence.storedBy[name] = now
	}
	return wake
}

// fenced reports whether writing the allocations newly of claim name must
// wait: another claim's stored status still shows an overlapping
// allocation that the ledger no longer holds (its release is not stored
// yet).
func (l *ledger) fenced(name string, newly []netip.Prefix) bool {
	for _, p := range newly {
		for q, holder := range l.fence.stored.Overlapping(p) {
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
