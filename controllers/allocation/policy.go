package allocation

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// poolPolicy is a delegable record's pool policy, parsed: what the records
// taken from it directly may ask for and get.
type poolPolicy struct {
	// minLength and maxLength bound a sub-prefix's length; 0 when unset.
	minLength, maxLength int
	// maxRecords is how many records one claim may hold from the pool; 0:
	// no limit.
	maxRecords int
	// reserved are the ranges first fit skips, in address order.
	reserved []netip.Prefix
	// grace is how long a released sub-prefix rests before another claim
	// gets it.
	grace time.Duration
}

// policyOf parses a record's pool policy; nil when it has none that
// changes anything.
func policyOf(p *networkingv1alpha1.PoolPolicy) (*poolPolicy, error) {
	if p == nil {
		return nil, nil
	}
	out := &poolPolicy{}
	if p.MinPrefixLength != nil {
		out.minLength = int(*p.MinPrefixLength)
	}
	if p.MaxPrefixLength != nil {
		out.maxLength = int(*p.MaxPrefixLength)
	}
	if p.MaxRecordsPerClaim != nil {
		out.maxRecords = int(*p.MaxRecordsPerClaim)
	}
	if p.ReuseGracePeriodSeconds != nil {
		out.grace = time.Duration(*p.ReuseGracePeriodSeconds) * time.Second
	}
	for _, r := range p.Reservations {
		prefix, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			return nil, fmt.Errorf("reservation %q: %w", r.Prefix, err)
		}
		out.reserved = append(out.reserved, prefix.Masked())
	}
	slices.SortFunc(out.reserved, comparePrefixes)
	if out.equal(&poolPolicy{}) {
		return nil, nil
	}
	return out, nil
}

// equal reports whether two policies are the same; nil is no policy.
func (p *poolPolicy) equal(o *poolPolicy) bool {
	if p == nil || o == nil {
		return p == o
	}
	return p.minLength == o.minLength && p.maxLength == o.maxLength && p.maxRecords == o.maxRecords &&
		p.grace == o.grace && slices.Equal(p.reserved, o.reserved)
}

// refuses says why the pool's policy refuses a sub-prefix of that length to
// claim, which holds held records from the pool already; "" when it does
// not.
func (p *poolPolicy) refuses(pool *record, length, held int) string {
	if p == nil {
		return ""
	}
	where := fmt.Sprintf("pool %s of NetworkClaim %s", pool.prefix, pool.claim)
	switch {
	case p.minLength > 0 && length < p.minLength:
		return fmt.Sprintf("a /%d is larger than %s hands out: ask for /%d to /%d", length, where, p.minLength, p.longest(pool))
	case p.maxLength > 0 && length > p.maxLength:
		return fmt.Sprintf("a /%d is smaller than %s hands out: ask for /%d to /%d", length, where, p.shortest(pool), p.maxLength)
	case p.maxRecords > 0 && held >= p.maxRecords:
		return fmt.Sprintf("a claim may hold at most %d records from %s, and this one holds %d: release one, or ask the pool's holder to raise maxRecordsPerClaim", p.maxRecords, where, held)
	}
	return ""
}

// shortest and longest are the lengths the pool hands out.
func (p *poolPolicy) shortest(pool *record) int {
	if p != nil && p.minLength > 0 {
		return p.minLength
	}
	return pool.prefix.Bits() + 1
}

func (p *poolPolicy) longest(pool *record) int {
	if p != nil && p.maxLength > 0 {
		return p.maxLength
	}
	return pool.prefix.Addr().BitLen()
}

// heldFrom counts the allocated records of claim, other than except, taken
// directly from pool.
func (l *ledger) heldFrom(claim string, pool *record, except *record) int {
	e, ok := l.claims[claim]
	if !ok {
		return 0
	}
	n := 0
	for _, r := range e.records {
		if r != except && r.allocated && isChildOf(r, pool) {
			n++
		}
	}
	return n
}

// isChildOf reports whether allocated record r is taken directly from pool:
// it names pool's claim in from and lies strictly inside it. A claim's
// allocations never overlap, so no other record of that claim can be its
// parent.
func isChildOf(r, pool *record) bool {
	return r.req.from == pool.claim && r.prefix.Bits() > pool.prefix.Bits() && pool.prefix.Contains(r.prefix.Addr()) &&
		(!r.req.pool.IsValid() || r.req.pool == pool.prefix)
}

// comparePrefixes orders prefixes by address, then shorter first: CIDR
// order.
func comparePrefixes(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
