package networkregistry

import (
	"net/netip"
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func TestDecisions(t *testing.T) {
	allocated, unavailable := v1alpha1.AllocationAllocated, v1alpha1.AllocationUnavailable
	tests := []struct {
		name   string
		record rec
		// status overrides the status record newClaim makes of record.
		status *v1alpha1.AddressSpaceStatus
		// want is the decision's status, "" for none, and the allocated
		// prefix, "" for none.
		want, wantPrefix string
	}{
		{name: "exact, allocated", record: rec{prefix: "10.96.0.0/12", status: allocated}, want: "Allocated", wantPrefix: "10.96.0.0/12"},
		{name: "exact, unavailable", record: rec{prefix: "10.96.0.0/12", status: unavailable, message: "x"}, want: "Unavailable"},
		{name: "exact, not decided", record: rec{prefix: "10.96.0.0/12"}},
		{name: "exact and named, status under another name", record: rec{name: "svc", prefix: "10.96.0.0/12", status: allocated},
			status: &v1alpha1.AddressSpaceStatus{Name: "old", Prefix: "10.96.0.0/12", Status: allocated}, want: "Allocated", wantPrefix: "10.96.0.0/12"},
		{name: "sub-prefix, delegated by its from", record: rec{prefix: "10.5.0.0/16", from: from("org", ""), status: allocated, delegatedFrom: heldBy("org", "10.0.0.0/8")},
			want: "Allocated", wantPrefix: "10.5.0.0/16"},
		{name: "sub-prefix, orphaned", record: rec{prefix: "10.5.0.0/16", from: from("org", ""), status: allocated}, want: "Allocated", wantPrefix: "10.5.0.0/16"},
		{name: "sub-prefix, delegated by another claim", record: rec{prefix: "10.5.0.0/16", from: from("org", ""), status: allocated, delegatedFrom: heldBy("other", "10.0.0.0/8")}},
		{name: "exact, decided when it was a sub-prefix", record: rec{prefix: "10.5.0.0/16", status: allocated, delegatedFrom: heldBy("org", "10.0.0.0/8")}},
		{name: "pool, allocated", record: rec{name: "p", from: from("org", "10.0.0.0/8"), length: 16, status: allocated, chosen: "10.3.0.0/16"}, want: "Allocated", wantPrefix: "10.3.0.0/16"},
		{name: "pool, waiting", record: rec{name: "p", from: from("org", ""), length: 16, status: unavailable, message: "no free /16"}, want: "Unavailable"},
		{name: "pool, chosen of another length", record: rec{name: "p", from: from("org", ""), length: 20, status: allocated, chosen: "10.3.0.0/16"}},
		{name: "pool, chosen outside the pinned pool", record: rec{name: "p", from: from("org", "11.0.0.0/8"), length: 16, status: allocated, chosen: "10.3.0.0/16"}},
		{name: "pool, status of another name", record: rec{name: "p", from: from("org", ""), length: 16, status: allocated},
			status: &v1alpha1.AddressSpaceStatus{Name: "q", Prefix: "10.3.0.0/16", Status: allocated}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("c", tc.record)
			if tc.status != nil {
				c.Status.AddressSpace = []v1alpha1.AddressSpaceStatus{*tc.status}
			}
			// A released record's status stays until the registry
			// catches up; it answers nothing.
			c.Status.AddressSpace = append(c.Status.AddressSpace, v1alpha1.AddressSpaceStatus{Name: "released", Prefix: "192.0.2.0/24", Status: allocated})
			decisions := Decisions(c)
			if len(decisions) != 1 || decisions[0].Record.Prefix != tc.record.prefix || decisions[0].Record.Name != tc.record.name {
				t.Fatalf("Decisions = %+v, want one for the spec record", decisions)
			}
			got := ""
			if s := decisions[0].Status; s != nil {
				got = string(s.Status)
			}
			if got != tc.want {
				t.Errorf("decision %q, want %q", got, tc.want)
			}
			p, ok := decisions[0].Allocated()
			if gotPrefix := p.String(); (tc.wantPrefix == "" && ok) || (tc.wantPrefix != "" && gotPrefix != tc.wantPrefix) {
				t.Errorf("Allocated() = %s, %t; want %q", p, ok, tc.wantPrefix)
			}
			allocations := AllocationsOf(c)
			if (tc.wantPrefix == "") != (len(allocations) == 0) || (len(allocations) == 1 && allocations[0].Prefix != netip.MustParsePrefix(tc.wantPrefix)) {
				t.Errorf("AllocationsOf = %+v, want %q", allocations, tc.wantPrefix)
			}
		})
	}
	if got := Decisions(nil); got != nil {
		t.Errorf("Decisions(nil) = %v", got)
	}
}

// The prefix the registry chooses for a pool record may be the one another
// record of the same claim asks for and waits for: each record is answered
// by its own status record, in whichever order status lists them, and the
// waiting one allocates nothing.
func TestDecisionsOfRecordsOnOnePrefix(t *testing.T) {
	allocated, unavailable := v1alpha1.AllocationAllocated, v1alpha1.AllocationUnavailable
	exact := rec{prefix: "10.0.0.0/23", status: unavailable, reason: v1alpha1.ReasonConflict, message: "overlaps 10.0.0.0/22 held by NetworkClaim org"}
	pool := rec{name: "r1", from: from("org", ""), length: 23, status: allocated, chosen: "10.0.0.0/23", delegatedFrom: heldBy("org", "10.0.0.0/22")}
	// The pool's claim deleted: the pool record keeps its prefix, named by
	// no parent, and the exact record waits for it.
	orphan := pool
	orphan.delegatedFrom = nil
	waitsForOrphan := exact
	waitsForOrphan.message = "overlaps 10.0.0.0/23 held by NetworkClaim c"
	for _, tc := range []struct {
		name    string
		records []rec
	}{
		{"exact first", []rec{exact, pool}},
		{"pool first", []rec{pool, exact}},
		{"the pool record an orphan", []rec{waitsForOrphan, orphan}},
		{"the pool record an orphan, first", []rec{orphan, waitsForOrphan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaim("c", tc.records...)
			for i, d := range Decisions(c) {
				want := tc.records[i]
				if d.Status == nil || d.Status.Status != want.status || d.Status.Name != want.name {
					t.Errorf("record %d (%s) is answered by %+v, want its own status, %s", i, d.Record.Key(), d.Status, want.status)
				}
			}
			allocations := AllocationsOf(c)
			if len(allocations) != 1 || allocations[0].Name != "r1" {
				t.Errorf("AllocationsOf = %+v, want the pool record's alone", allocations)
			}
		})
	}
}
