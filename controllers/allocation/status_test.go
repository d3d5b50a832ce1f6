package allocation

import (
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// The status says in fields what the ledger decided, and the restore reads
// the same fields back.
func TestDesiredStatusRoundTrip(t *testing.T) {
	length := int32(16)
	claim := &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-a", Generation: 3},
		Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{
			{Name: "pods", From: &networkingv1alpha1.PrefixSource{Claim: "org"}, PrefixLength: &length, Delegable: true},
			{Prefix: "10.96.0.0/12"},
			{Name: "more", From: &networkingv1alpha1.PrefixSource{Claim: "org"}, PrefixLength: &length},
		}},
	}
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	records := specOf(t.Context(), claim).records
	decisions := []decision{
		{record: record{recordSpec: records[0], allocated: true, prefix: netip.MustParsePrefix("10.1.0.0/16"), seq: 42, since: since},
			parent: holding{"org", netip.MustParsePrefix("10.0.0.0/8")}},
		{record: record{recordSpec: records[1], prefix: netip.MustParsePrefix("10.96.0.0/12"), reason: networkingv1alpha1.ReasonConflict,
			holder: holding{"kube", netip.MustParsePrefix("10.96.0.0/16")}, seq: 43, since: since}},
		{record: record{recordSpec: records[2], reason: networkingv1alpha1.ReasonPoolExhausted, holder: holding{"org", netip.MustParsePrefix("10.0.0.0/8")}, seq: 44, since: since}},
	}
	status := desiredStatus(claim, 3, decisions)
	want := []networkingv1alpha1.AddressSpaceStatus{
		{Name: "pods", Prefix: "10.1.0.0/16", Delegable: true, Date: metav1.NewTime(since), Status: networkingv1alpha1.AllocationAllocated,
			DelegatedFrom: &networkingv1alpha1.ClaimedPrefix{Claim: "org", Prefix: "10.0.0.0/8"}, FirstSeenResourceVersion: "42"},
		{Prefix: "10.96.0.0/12", Date: metav1.NewTime(since), Status: networkingv1alpha1.AllocationUnavailable, Reason: networkingv1alpha1.ReasonConflict,
			Message: "overlaps 10.96.0.0/16 held by NetworkClaim kube", ConflictsWith: &networkingv1alpha1.ClaimedPrefix{Claim: "kube", Prefix: "10.96.0.0/16"}, FirstSeenResourceVersion: "43"},
		{Name: "more", Date: metav1.NewTime(since), Status: networkingv1alpha1.AllocationUnavailable, Reason: networkingv1alpha1.ReasonPoolExhausted,
			Message: "no free /16 in 10.0.0.0/8 of NetworkClaim org", FirstSeenResourceVersion: "44"},
	}
	if len(status.AddressSpace) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(status.AddressSpace), len(want), status.AddressSpace)
	}
	for i := range want {
		got := status.AddressSpace[i]
		if got.Name != want[i].Name || got.Prefix != want[i].Prefix || got.Status != want[i].Status || got.Reason != want[i].Reason ||
			got.Message != want[i].Message || got.Delegable != want[i].Delegable || got.FirstSeenResourceVersion != want[i].FirstSeenResourceVersion ||
			(got.ConflictsWith == nil) != (want[i].ConflictsWith == nil) || (got.ConflictsWith != nil && *got.ConflictsWith != *want[i].ConflictsWith) ||
			(got.DelegatedFrom == nil) != (want[i].DelegatedFrom == nil) || (got.DelegatedFrom != nil && *got.DelegatedFrom != *want[i].DelegatedFrom) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
	ready := meta.FindStatusCondition(status.Conditions, networkingv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != networkingv1alpha1.ReasonConflict ||
		ready.Message != "2 of 3 records unavailable: 10.96.0.0/12 overlaps 10.96.0.0/16 held by NetworkClaim kube; and 1 more" {
		t.Errorf("Ready: %+v", ready)
	}

	claim.Status = status
	recorded := recordedOf(claim, records)
	if r := recorded[networkingv1alpha1.RecordKey{Name: "pods"}]; !r.allocated || r.prefix != netip.MustParsePrefix("10.1.0.0/16") || r.seq != 42 {
		t.Errorf("pods read back as %+v", r)
	}
	if r := recorded[networkingv1alpha1.RecordKey{Prefix: "10.96.0.0/12"}]; r.allocated || r.reason != networkingv1alpha1.ReasonConflict || r.conflict != (holding{"kube", netip.MustParsePrefix("10.96.0.0/16")}) {
		t.Errorf("10.96.0.0/12 read back as %+v", r)
	}
	if r := recorded[networkingv1alpha1.RecordKey{Name: "more"}]; r.allocated || r.reason != networkingv1alpha1.ReasonPoolExhausted || r.prefix.IsValid() || r.seq != 44 {
		t.Errorf("more read back as %+v", r)
	}
	// Asked for another length since, pods's allocation answers an earlier
	// request: it is not read back, and the record is decided again.
	longer := int32(24)
	claim.Spec.AddressSpace[0].PrefixLength = &longer
	if r, ok := recordedOf(claim, specOf(t.Context(), claim).records)[networkingv1alpha1.RecordKey{Name: "pods"}]; ok {
		t.Errorf("pods's /16 was read back for a /24 request: %+v", r)
	}
}

// A new leader rebuilds the ledger from the status the controller wrote,
// read back as the controller reads it: the same book, nothing decided
// anew.
func TestRestoreFromWrittenStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{{
		name: "delegation nests, pools fill, a record waits",
		steps: []step{
			{sync: spec("iana", 1, exact("10.0.0.0/8").delegable())},
			{sync: spec("rir", 2, pool("block", "iana", 12).delegable(), exact("fd00::/8"))},
			{sync: spec("lir", 3, pool("block", "rir", 16), sub("10.1.0.0/16", "rir"))},
			{sync: spec("squatter", 4, exact("10.0.0.0/24"))},
		},
	}, {
		// The pool record gets the prefix its claim's exact record asks
		// for: the exact record waits, blocked by org's delegable prefix.
		name: "a pool record given the prefix another record of its claim waits for",
		steps: []step{
			{sync: spec("org", 1, exact("10.0.0.0/22").delegable())},
			{sync: spec("a", 2, exact("10.0.0.0/23"), pool("r1", "org", 23))},
		},
	}, {
		// Now it waits for its own claim's pool record, an orphan.
		name: "the same, once the pool is gone",
		steps: []step{
			{sync: spec("org", 1, exact("10.0.0.0/22").delegable())},
			{sync: spec("a", 2, exact("10.0.0.0/23"), pool("r1", "org", 23))},
			{forget: "org"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLedger()
			specs := map[string]claimSpec{}
			for _, s := range tc.steps {
				if s.forget != "" {
					l.forget(s.forget, "")
					delete(specs, s.forget)
				} else {
					l.sync(s.sync)
					specs[s.sync.name] = s.sync
				}
			}
			var written []claimSpec
			for _, name := range slices.Sorted(maps.Keys(specs)) {
				claim := claimOf(specs[name])
				generation, decisions, _ := l.records(name, claim.UID)
				claim.Status = desiredStatus(claim, generation, decisions)
				s := specOf(t.Context(), claim)
				s.recorded = recordedOf(claim, s.records)
				written = append(written, s)
			}
			restored := testLedger()
			if changes := restored.restore(written); len(changes) > 0 {
				t.Errorf("the restore decided anew: %q", formatChanges(changes))
			}
			if got, want := state(restored), state(l); !maps.Equal(got, want) {
				t.Errorf("the restored ledger differs (-restored +before):\n%s", diff.Diff(got, want))
			}
		})
	}
}

// claimOf is the claim whose spec s parses.
func claimOf(s claimSpec) *networkingv1alpha1.NetworkClaim {
	claim := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{
		Name: s.name, UID: s.uid, Generation: s.generation, ResourceVersion: strconv.FormatUint(s.resourceVersion, 10),
	}}
	for _, rs := range s.records {
		r := networkingv1alpha1.AddressSpaceRecord{Name: rs.key.Name, Prefix: rs.key.Prefix, Delegable: rs.req.delegable}
		if rs.req.length >= 0 {
			length := int32(rs.req.length)
			r.PrefixLength = &length
		}
		if rs.req.from != "" {
			r.From = &networkingv1alpha1.PrefixSource{Claim: rs.req.from}
			if rs.req.pool.IsValid() {
				r.From.Prefix = rs.req.pool.String()
			}
		}
		claim.Spec.AddressSpace = append(claim.Spec.AddressSpace, r)
	}
	return claim
}
