package robustness

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// Reset starts the claims over in a history of ClaimEvents: the watch
// ended with 410 Gone, and the claims listed again follow (as Added).
const Reset EventType = "RESET"

// ClaimEvent is one event of a watch of NetworkClaims: the claim as it was
// at its resourceVersion, or as it was deleted; or a Reset.
type ClaimEvent struct {
	Type  EventType                       `json:"type"`
	Claim networkingv1alpha1.NetworkClaim `json:"claim"`
}

// held is an Allocated record: a prefix held by a claim.
type held struct {
	claim  string
	prefix netip.Prefix
	// from is the claim and prefix it was delegated from, if any.
	from *networkingv1alpha1.ClaimedPrefix
}

func (h held) String() string { return h.claim + "/" + h.prefix.String() }

// CheckRegistry checks the registry's invariants at every revision of the
// NetworkClaim events (a watch's, in order): no two Allocated records
// overlap, and so no prefix is Allocated to two claims, unless one is
// delegated from the other (from a pool, or a delegable claim), directly or
// through delegations. It returns how many revisions it checked.
func CheckRegistry(events []ClaimEvent) (int, error) {
	claims := map[string]networkingv1alpha1.NetworkClaim{}
	var errs []error
	checked := 0
	for _, e := range events {
		switch e.Type {
		case Bookmark:
			continue
		case Reset:
			claims = map[string]networkingv1alpha1.NetworkClaim{}
			continue
		case Deleted:
			delete(claims, e.Claim.Name)
		default:
			claims[e.Claim.Name] = e.Claim
		}
		checked++
		if err := checkOverlaps(claims); err != nil {
			errs = append(errs, fmt.Errorf("at resourceVersion %s (%s %s): %w", e.Claim.ResourceVersion, e.Type, e.Claim.Name, err))
		}
	}
	return checked, errors.Join(errs...)
}

func checkOverlaps(claims map[string]networkingv1alpha1.NetworkClaim) error {
	var all []held
	byKey := map[string]held{}
	for _, c := range claims {
		for _, r := range c.Status.AddressSpace {
			if r.Status != networkingv1alpha1.AllocationAllocated || r.Prefix == "" {
				continue
			}
			p, err := netip.ParsePrefix(r.Prefix)
			if err != nil {
				return fmt.Errorf("claim %s holds %q, which is no prefix", c.Name, r.Prefix)
			}
			h := held{claim: c.Name, prefix: p.Masked(), from: r.DelegatedFrom}
			all = append(all, h)
			byKey[h.String()] = h
		}
	}
	slices.SortFunc(all, func(a, b held) int { return a.prefix.Addr().Compare(b.prefix.Addr()) })
	var errs []error
	for i, a := range all {
		for _, b := range all[i+1:] {
			if !a.prefix.Overlaps(b.prefix) || delegatedFrom(a, b, byKey) || delegatedFrom(b, a, byKey) {
				continue
			}
			if a.prefix == b.prefix {
				errs = append(errs, fmt.Errorf("%s is Allocated to %s and to %s", a.prefix, a.claim, b.claim))
			} else {
				errs = append(errs, fmt.Errorf("Allocated %s and %s overlap", a, b))
			}
		}
	}
	return errors.Join(errs...)
}

// delegatedFrom reports whether a was delegated from b, directly or
// through records delegated in turn.
func delegatedFrom(a, b held, byKey map[string]held) bool {
	for range 16 {
		if a.from == nil {
			return false
		}
		from, err := netip.ParsePrefix(a.from.Prefix)
		if err != nil {
			return false
		}
		from = from.Masked()
		if a.from.Claim == b.claim && from == b.prefix {
			return true
		}
		parent, ok := byKey[a.from.Claim+"/"+from.String()]
		if !ok {
			return false
		}
		a = parent
	}
	return false
}

// CheckRegistrySettled checks the registry once the faults have healed and
// the allocator has had its time: every claim is decided (its status
// observes its generation, and each record is Allocated or Unavailable),
// and no record waits (Unavailable, conflicting with a holder) for a
// holder that no longer holds the prefix: it was promoted when the holder
// released it.
func CheckRegistrySettled(claims []networkingv1alpha1.NetworkClaim) error {
	holders := map[string]bool{}
	for _, c := range claims {
		for _, r := range c.Status.AddressSpace {
			if r.Status == networkingv1alpha1.AllocationAllocated {
				holders[c.Name+"/"+r.Prefix] = true
			}
		}
	}
	var errs []error
	for _, c := range claims {
		if c.Status.ObservedGeneration != c.Generation {
			errs = append(errs, fmt.Errorf("claim %s is not decided: its status observes generation %d of %d", c.Name, c.Status.ObservedGeneration, c.Generation))
			continue
		}
		if len(c.Status.AddressSpace) != len(c.Spec.AddressSpace) {
			errs = append(errs, fmt.Errorf("claim %s is not decided: %d records, %d in its status", c.Name, len(c.Spec.AddressSpace), len(c.Status.AddressSpace)))
		}
		for _, r := range c.Status.AddressSpace {
			switch r.Status {
			case networkingv1alpha1.AllocationAllocated:
			case networkingv1alpha1.AllocationUnavailable:
				if w := r.ConflictsWith; w != nil && !holders[w.Claim+"/"+w.Prefix] {
					errs = append(errs, fmt.Errorf("claim %s's record %s waits for %s/%s, which no longer holds it: it should have been promoted", c.Name, r.Name, w.Claim, w.Prefix))
				}
			default:
				errs = append(errs, fmt.Errorf("claim %s's record %s is %q, neither Allocated nor Unavailable", c.Name, r.Name, r.Status))
			}
		}
	}
	return errors.Join(errs...)
}
