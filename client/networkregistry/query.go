package networkregistry

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// ParseAddrOrPrefix reads what WhoHas accepts: an IP address ("10.96.0.1",
// "fd00::1"), which becomes the prefix of that one address, or a CIDR
// ("10.96.0.0/12"), masked to its network address. Callers that take the
// input from a user can check it with this before they start a Registry.
func ParseAddrOrPrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		if a, err := netip.ParseAddr(s); err == nil {
			// An address is an address, whatever interface it was
			// seen on, and an IPv4-mapped one is the IPv4 address.
			a = a.WithZone("").Unmap()
			return netip.PrefixFrom(a, a.BitLen()), nil
		}
	} else if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q: write an IP address such as 10.96.0.1 or a prefix such as 10.96.0.0/12", s)
}

// WhoHas returns the allocations that hold addrOrPrefix: for an IP address,
// the allocated prefixes that contain it; for a prefix, those that overlap
// it (contain it or lie inside it). It returns an error, saying what to
// write, when addrOrPrefix is neither, and nothing before Start returned nil.
func (r *Registry) WhoHas(addrOrPrefix string) ([]Allocation, error) {
	p, err := ParseAddrOrPrefix(addrOrPrefix)
	if err != nil {
		return nil, err
	}
	return r.Overlaps(p), nil
}

// Overlaps returns the allocations whose prefix shares at least one address
// with p: the question to ask before using p. It returns nothing before
// Start returned nil.
func (r *Registry) Overlaps(p netip.Prefix) []Allocation {
	if !p.IsValid() || !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Allocation
	for q, claim := range r.index.Overlapping(p) {
		out = append(out, r.allocations[claim][q].clone())
	}
	sortAllocations(out)
	return out
}

// Prefixes returns every allocated prefix whose claim record references
// exactly ref's group and resource, e.g. {Group: "", Resource: "services"}
// for the Service ranges a service proxy must route. IPv4 prefixes come
// first, then IPv6, each in CIDR order. It returns nothing before Start
// returned nil.
func (r *Registry) Prefixes(ref v1alpha1.ResourceReference) []netip.Prefix {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []netip.Prefix
	for _, allocations := range r.allocations {
		for p, a := range allocations {
			if a.Reference != nil && *a.Reference == ref {
				out = append(out, p)
			}
		}
	}
	slices.SortFunc(out, netip.Prefix.Compare)
	return slices.Compact(out)
}

// Allocations returns every allocation, in prefix order (IPv4 first, then
// CIDR order), then by claim name. It returns nothing before Start returned
// nil.
func (r *Registry) Allocations() []Allocation {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Allocation, 0, r.index.Len())
	// The index yields prefixes in CIDR order, the holders of one prefix
	// in the order they came: only those need sorting.
	first := 0
	for p, claim := range r.index.All() {
		if len(out) > 0 && out[first].Prefix != p {
			sortAllocations(out[first:])
			first = len(out)
		}
		out = append(out, r.allocations[claim][p].clone())
	}
	sortAllocations(out[first:])
	return out
}

// Claims returns every NetworkClaim as the registry last saw it, sorted by
// name, with its undecided and unavailable records too: what a listing of
// the registry shows. The claims are copies; their managed fields are not
// kept. It returns nothing before Start returned nil.
func (r *Registry) Claims() []*v1alpha1.NetworkClaim {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*v1alpha1.NetworkClaim, 0, len(r.claims))
	for _, c := range r.claims {
		out = append(out, c.DeepCopy())
	}
	slices.SortFunc(out, func(a, b *v1alpha1.NetworkClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NetworkClaim returns the NetworkClaim name as the registry last saw it, a
// copy without managed fields, or nil when there is none (or before Start
// returned nil).
func (r *Registry) NetworkClaim(name string) *v1alpha1.NetworkClaim {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.claims[name].DeepCopy()
}

// WaitingRecord is a spec record the registry has not allocated: it found
// the record Unavailable (Status says why, and whom it waits for), or has
// not decided on it yet (Status nil).
type WaitingRecord struct {
	// Claim is the name of the NetworkClaim whose record it is.
	Claim string
	Decision
}

// Waiting returns every spec record that is not allocated, by claim name,
// then in spec order: what a tenant waiting behind another's prefix, or
// for room in a pool, looks for. The registry keeps them apart as claims
// change, so this takes time that grows with their number, not with the
// number of claims. It returns nothing before Start returned nil.
func (r *Registry) Waiting() []WaitingRecord {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []WaitingRecord
	for name, decisions := range r.waiting {
		for _, d := range decisions {
			out = append(out, WaitingRecord{Claim: name, Decision: Decision{Record: *d.Record.DeepCopy(), Status: d.Status.DeepCopy()}})
		}
	}
	// Stable: one claim's records keep their spec order.
	slices.SortStableFunc(out, func(a, b WaitingRecord) int { return strings.Compare(a.Claim, b.Claim) })
	return out
}

// Chain returns the delegation chain of a: a itself, then the delegable
// allocation it was taken from (its DelegatedFrom), then the one that was
// taken from, and so on up to an allocation claimed in its own right, e.g.
// cluster-b's 10.1.0.0/16, org-pods' 10.0.0.0/8. The chain ends early when
// a step names an allocation the registry no longer holds (the delegating
// claim released it; the last element's DelegatedFrom then says which it
// was). It returns nothing before Start returned nil.
func (r *Registry) Chain(a Allocation) []Allocation {
	if !r.synced.Load() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := []Allocation{a.clone()}
	seen := map[ClaimedPrefix]bool{{Claim: a.Claim, Prefix: a.Prefix}: true}
	for from := a.DelegatedFrom; from != nil; {
		// The registry never writes a cycle; a status written by hand
		// might, and must not hang the caller.
		if seen[*from] {
			break
		}
		seen[*from] = true
		parent, ok := r.allocations[from.Claim][from.Prefix]
		if !ok {
			break
		}
		out = append(out, parent.clone())
		from = parent.DelegatedFrom
	}
	return out
}

func (a Allocation) clone() Allocation {
	a.Reference = a.Reference.DeepCopy()
	if a.DelegatedFrom != nil {
		from := *a.DelegatedFrom
		a.DelegatedFrom = &from
	}
	return a
}

// sortAllocations orders allocations by prefix in CIDR order (IPv4 before
// IPv6, then by address, then shorter prefixes first: netip.Prefix.Compare
// for masked prefixes), then by claim name.
func sortAllocations(allocations []Allocation) {
	slices.SortFunc(allocations, func(a, b Allocation) int {
		if c := a.Prefix.Compare(b.Prefix); c != 0 {
			return c
		}
		return strings.Compare(a.Claim, b.Claim)
	})
}
