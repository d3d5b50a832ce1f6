package allocation

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// A claim's spec is parsed once, when the decider takes the claim, into
// recordSpecs, which the ledger's records embed; status is rendered from
// copies of those records, each at the spec index it carries.

// claimSpec is what the ledger needs of a claim.
type claimSpec struct {
	name            string
	uid             types.UID
	generation      int64
	resourceVersion uint64
	// records are the spec's records, in spec order.
	records []recordSpec
	// recorded is the claim's status, by record key; used by restore only.
	recorded map[networkingv1alpha1.RecordKey]recordedStatus
}

// recordSpec is one spec record, parsed.
type recordSpec struct {
	key networkingv1alpha1.RecordKey
	req request
	// policy is a delegable record's pool policy; nil: none.
	policy *poolPolicy
	// index is the record's place in the claim's spec, where status shows
	// its decision.
	index int
}

// A record is known by its key in spec.addressSpace, the API's
// (networkingv1alpha1.RecordKey: name and prefix, as the list's map keys).
// A record taken from a pool has no prefix in spec (its status shows the
// one it got), so its name alone identifies it.

// recordName names a record in logs: by name if it has one.
func recordName(k networkingv1alpha1.RecordKey) string {
	if k.Name != "" {
		return k.Name
	}
	return k.Prefix
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

// recordedStatus is a status record as stored.
type recordedStatus struct {
	allocated bool
	prefix    netip.Prefix
	date      time.Time
	seq       uint64
	reason    string
	// conflict is the allocation a Conflict record names.
	conflict holding
	// cooling is an allocated pool's cooling list.
	cooling []cooled
}

// specOf parses a claim's spec for the ledger.
func specOf(ctx context.Context, claim *networkingv1alpha1.NetworkClaim) claimSpec {
	s := claimSpec{name: claim.Name, uid: claim.UID, generation: claim.Generation}
	s.resourceVersion, _ = strconv.ParseUint(claim.ResourceVersion, 10, 64)
	for i, r := range claim.Spec.AddressSpace {
		rs, err := recordSpecOf(r)
		if err != nil {
			// Validation admits only canonical records; a stored one that
			// does not parse is left undecided rather than guessed at.
			klog.FromContext(ctx).Error(err, "Ignoring a record that does not parse", "claim", claim.Name, "record", r.Name, "prefix", r.Prefix)
			continue
		}
		rs.index = i
		s.records = append(s.records, rs)
	}
	return s
}

// recordSpecOf parses a spec record.
func recordSpecOf(r networkingv1alpha1.AddressSpaceRecord) (recordSpec, error) {
	rs, err := requestOf(r)
	if err != nil || !r.Delegable {
		return rs, err
	}
	rs.policy, err = policyOf(r.Pool)
	return rs, err
}

// requestOf parses what a spec record asks for.
func requestOf(r networkingv1alpha1.AddressSpaceRecord) (recordSpec, error) {
	req := request{length: -1, delegable: r.Delegable}
	if r.From != nil {
		req.from = r.From.Claim
		if r.From.Prefix != "" {
			pool, err := netip.ParsePrefix(r.From.Prefix)
			if err != nil {
				return recordSpec{}, err
			}
			req.pool = pool
		}
	}
	if r.PrefixLength != nil {
		if r.From == nil || r.Name == "" {
			return recordSpec{}, errors.New("a record with prefixLength needs name and from")
		}
		req.length = int(*r.PrefixLength)
		return recordSpec{key: r.Key(), req: req}, nil
	}
	p, err := netip.ParsePrefix(r.Prefix)
	if err != nil {
		return recordSpec{}, err
	}
	req.prefix = p
	return recordSpec{key: r.Key(), req: req}, nil
}

// recordedOf is the decisions a claim's status records for its parsed
// records, by record key: the status records that answer a spec record as
// it asks now (see networkregistry.Decisions), so that a record that asks
// for other space than it was given is decided again.
func recordedOf(claim *networkingv1alpha1.NetworkClaim, records []recordSpec) map[networkingv1alpha1.RecordKey]recordedStatus {
	decisions := networkregistry.Decisions(claim) // one per spec record, in spec order
	out := map[networkingv1alpha1.RecordKey]recordedStatus{}
	for _, rs := range records {
		r := decisions[rs.index].Status
		if r == nil {
			continue
		}
		s := recordedStatus{allocated: r.Status == networkingv1alpha1.AllocationAllocated, date: r.Date.Time, reason: r.Reason}
		s.prefix, _ = netip.ParsePrefix(r.Prefix)
		s.seq, _ = strconv.ParseUint(r.FirstSeenResourceVersion, 10, 64)
		if s.reason == "" && !s.allocated {
			s.reason = networkingv1alpha1.ReasonConflict // written before reasons were
		}
		if c := r.ConflictsWith; c != nil {
			s.conflict.claim = c.Claim
			s.conflict.prefix, _ = netip.ParsePrefix(c.Prefix)
		}
		if s.allocated && r.Pool != nil {
			for _, c := range r.Pool.CoolingPrefixes {
				if p, err := netip.ParsePrefix(c.Prefix); err == nil {
					s.cooling = append(s.cooling, cooled{prefix: p, claim: c.Claim, until: c.ReusableAt.Time})
				}
			}
		}
		out[rs.key] = s
	}
	return out
}

// storedAllocations are the prefixes a claim's status records as
// allocated, whether still in spec or not.
func storedAllocations(claim *networkingv1alpha1.NetworkClaim) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range claim.Status.AddressSpace {
		if r.Status != networkingv1alpha1.AllocationAllocated {
			continue
		}
		if p, err := netip.ParsePrefix(r.Prefix); err == nil {
			out = append(out, p)
		}
	}
	return out
}
