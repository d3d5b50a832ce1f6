package allocation

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
)

// A pool with a reuse grace period keeps each sub-prefix released from it
// out of other claims' reach until the period ends ("cooling"): routes to
// its previous holder may still exist. The list lives in the pool's
// status, so a new leader reads it back.

// cooled is a released sub-prefix in its pool's reuse grace period.
type cooled struct {
	prefix netip.Prefix
	// claim released it; it may take it back at once.
	claim string
	until time.Time
}

// cool starts the grace period of r, an allocation being released, if it
// was taken from a pool that has one.
func (l *ledger) cool(r *record) {
	pool := l.parentFor(r.req, r.prefix, false)
	if pool == nil || pool.policy == nil || pool.policy.grace <= 0 || !isChildOf(r, pool) {
		return
	}
	old := l.cooling[pool]
	n := cooled{prefix: r.prefix, claim: r.claim, until: l.stamp().Add(pool.policy.grace)}
	var list []cooled
	var gone []netip.Prefix
	if len(overlapping(l.coolingSpans[pool], r.prefix)) == 0 && (len(old) == 0 || !n.until.Before(old[len(old)-1].until)) {
		// The usual release: nothing on the list overlaps it and it
		// rests longest. Appending past the old list's end leaves the
		// old list as it was (anything that read it keeps it), and
		// saves a copy of up to validation.MaxCoolingPrefixes entries.
		list = append(old, n)
	} else {
		list = make([]cooled, 0, len(old)+1)
		for _, c := range old {
			if c.prefix.Overlaps(r.prefix) {
				gone = append(gone, c.prefix)
			} else {
				list = append(list, c)
			}
		}
		// The list stays soonest reusable first: the new entry goes
		// after the ones that end with it or before.
		at, _ := slices.BinarySearchFunc(list, n.until, func(c cooled, t time.Time) int {
			if c.until.After(t) {
				return 1
			}
			return -1
		})
		list = slices.Insert(list, at, n)
	}
	added := []netip.Prefix{n.prefix}
	if k := len(list) - validation.MaxCoolingPrefixes; k > 0 {
		// The status has room for so many: drop the ones reusable
		// soonest, which lose the least of their rest. They are free
		// at once, so setCooling lowers the full marks to them.
		for _, c := range list[:k] {
			if c.prefix == n.prefix {
				added = nil
			} else {
				gone = append(gone, c.prefix)
			}
		}
		list = list[k:]
	}
	l.setCooling(pool, list, gone, added)
	l.poolChanged(pool)
}

// coolingFor returns the cooling sub-prefix of pool that p overlaps and
// claim did not release, if any.
func (l *ledger) coolingFor(pool *record, p netip.Prefix, claim string) (cooled, bool) {
	for _, c := range l.cooling[pool] {
		if c.prefix.Overlaps(p) && c.claim != claim {
			return c, true
		}
	}
	return cooled{}, false
}

// expire ends the grace periods that are over at now, and decides again
// the records waiting on those pools.
func (l *ledger) expire() []change {
	now := l.now()
	var pools []string
	for pool, list := range l.cooling {
		n := 0
		for n < len(list) && !now.Before(list[n].until) {
			n++
		}
		if n == 0 {
			continue
		}
		// First fit looks at the rested space again: setCooling lowers
		// the pool's full mark to it.
		gone := make([]netip.Prefix, n)
		for i, c := range list[:n] {
			gone[i] = c.prefix
		}
		l.setCooling(pool, list[n:], gone, nil)
		l.poolChanged(pool)
		pools = append(pools, pool.claim)
	}
	if len(pools) == 0 {
		return nil
	}
	return l.promote(l.candidates(nil, pools))
}

// nextExpiry returns when the next grace period ends, and the claim that
// holds its pool.
func (l *ledger) nextExpiry() (time.Time, string, bool) {
	var at time.Time
	var claim string
	for pool, list := range l.cooling {
		if len(list) > 0 && (at.IsZero() || list[0].until.Before(at)) {
			at, claim = list[0].until, pool.claim
		}
	}
	return at, claim, !at.IsZero()
}

// coolingMessage says why a record waits for a cooling prefix.
func coolingMessage(c cooled, pool holding) string {
	return fmt.Sprintf("%s was released by NetworkClaim %s and rests until %s, the reuse grace period of pool %s of NetworkClaim %s",
		c.prefix, c.claim, c.until.UTC().Format(time.RFC3339), pool.prefix, pool.claim)
}

// coolingStatus renders a pool's cooling list for its status.
func coolingStatus(list []cooled) []networkingv1alpha1.CoolingPrefix {
	var out []networkingv1alpha1.CoolingPrefix
	for _, c := range list {
		out = append(out, networkingv1alpha1.CoolingPrefix{Prefix: c.prefix.String(), Claim: c.claim, ReusableAt: metav1Time(c.until)})
	}
	return out
}
