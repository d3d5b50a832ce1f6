package networkregistry

import (
	"encoding/json"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clienttesting "k8s.io/client-go/testing"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// The policy of a delegable record is applied with the record, its unset
// fields not sent; the API's validation refuses what the server would.
func TestClaimPoolPolicy(t *testing.T) {
	r, client := startRegistry(t)
	var sent []clienttesting.PatchActionImpl
	recordApplies(client, &sent)
	v4, v6 := netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/32")
	tests := []struct {
		name   string
		record Record
		// want is the pool policy applied; wantErr, when set, the error.
		want    *v1alpha1.PoolPolicy
		wantErr string
	}{
		{
			name: "every field",
			record: Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{
				MinPrefixLength: 16, MaxPrefixLength: 24, MaxRecordsPerClaim: 2,
				Reservations:     []Reservation{{Prefix: netip.MustParsePrefix("10.255.0.0/16"), Description: "infrastructure"}, {Prefix: netip.MustParsePrefix("10.254.0.0/16")}},
				ReuseGracePeriod: time.Hour,
			}},
			want: &v1alpha1.PoolPolicy{
				MinPrefixLength: ptr[int32](16), MaxPrefixLength: ptr[int32](24), MaxRecordsPerClaim: ptr[int32](2),
				Reservations:            []v1alpha1.PoolReservation{{Prefix: "10.255.0.0/16", Description: "infrastructure"}, {Prefix: "10.254.0.0/16"}},
				ReuseGracePeriodSeconds: ptr[int64](3600),
			},
		},
		{
			name:   "some fields",
			record: Record{Prefix: v6, Delegable: true, Pool: &PoolPolicy{MaxPrefixLength: 64}},
			want:   &v1alpha1.PoolPolicy{MaxPrefixLength: ptr[int32](64)},
		},
		{
			// The API counts seconds; rounded up, the prefix rests at
			// least as long as asked.
			name:   "grace period of a fraction of a second",
			record: Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{ReuseGracePeriod: 1500 * time.Millisecond}},
			want:   &v1alpha1.PoolPolicy{ReuseGracePeriodSeconds: ptr[int64](2)},
		},
		{
			// A pool record that hands out in turn: lengths against the
			// length it asks for.
			name:   "delegable pool record",
			record: Record{Name: "pods", From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 16, Delegable: true, Pool: &PoolPolicy{MinPrefixLength: 20, MaxPrefixLength: 28}},
			want:   &v1alpha1.PoolPolicy{MinPrefixLength: ptr[int32](20), MaxPrefixLength: ptr[int32](28)},
		},
		{
			name:    "not delegable",
			record:  Record{Prefix: v4, Pool: &PoolPolicy{MaxRecordsPerClaim: 1}},
			wantErr: "spec.addressSpace[0].pool: Invalid value: \"\": only a delegable record hands out sub-prefixes: add delegable: true, or remove pool",
		},
		{
			name:    "min as short as the record",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{MinPrefixLength: 8}},
			wantErr: "spec.addressSpace[0].pool.minPrefixLength: Invalid value: 8: must be the length of a sub-prefix of this record, longer than its own: write 9 to 32",
		},
		{
			name:    "max beyond the family",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{MaxPrefixLength: 64}},
			wantErr: "spec.addressSpace[0].pool.maxPrefixLength: Invalid value: 64: must be the length of a sub-prefix of this record, longer than its own: write 9 to 32",
		},
		{
			name:    "max shorter than min",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{MinPrefixLength: 24, MaxPrefixLength: 16}},
			wantErr: "spec.addressSpace[0].pool.maxPrefixLength: Invalid value: 16: must not be shorter than minPrefixLength 24",
		},
		{
			name:    "negative records per claim",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{MaxRecordsPerClaim: -1}},
			wantErr: "spec.addressSpace[0].pool.maxRecordsPerClaim: Invalid value: -1: must be 1 to 64",
		},
		{
			name:    "negative grace period",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{ReuseGracePeriod: -time.Millisecond}},
			wantErr: "spec.addressSpace[0].pool.reuseGracePeriodSeconds: Invalid value: -1: must be 0 to 2592000 (30 days)",
		},
		{
			name:    "grace period beyond 30 days",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{ReuseGracePeriod: 31 * 24 * time.Hour}},
			wantErr: "spec.addressSpace[0].pool.reuseGracePeriodSeconds: Invalid value: 2678400: must be 0 to 2592000 (30 days)",
		},
		{
			name:    "reservation outside the record",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{Reservations: []Reservation{{Prefix: netip.MustParsePrefix("11.0.0.0/16")}}}},
			wantErr: `spec.addressSpace[0].pool.reservations[0].prefix: Invalid value: "11.0.0.0/16": must lie strictly inside the record's prefix 10.0.0.0/8`,
		},
		{
			name:    "reservation without a prefix",
			record:  Record{Prefix: v4, Delegable: true, Pool: &PoolPolicy{Reservations: []Reservation{{Description: "gateways"}}}},
			wantErr: "spec.addressSpace[0].pool.reservations[0].prefix: ",
		},
		{
			name:    "reservations of a pool record",
			record:  Record{Name: "pods", From: &PrefixSource{Claim: "org-pods"}, PrefixLength: 16, Delegable: true, Pool: &PoolPolicy{Reservations: []Reservation{{Prefix: netip.MustParsePrefix("10.0.0.0/24")}}}},
			wantErr: "a record whose prefix the registry chooses cannot know its reservations in advance",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sent = nil
			got, err := r.Claim(t.Context(), "org", []Record{tc.record})
			if tc.wantErr != "" {
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) || len(sent) > 0 {
					t.Fatalf("Claim: %v after %d requests; want an Invalid error containing %q, and no request", err, len(sent), tc.wantErr)
				}
				if errs := ValidateClaim("org", []Record{tc.record}); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) {
					t.Errorf("ValidateClaim: %v; want %q", errs, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sent) != 1 || !equality.Semantic.DeepEqual(got.Spec.AddressSpace[0].Pool, tc.want) {
				t.Fatalf("Claim applied %s\nwant the pool %+v", sent[0].GetPatch(), tc.want)
			}
			// Unset fields are not sent, so that this field manager does
			// not own them.
			var applied struct {
				Spec struct {
					AddressSpace []struct {
						Pool map[string]any `json:"pool"`
					} `json:"addressSpace"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(sent[0].GetPatch(), &applied); err != nil {
				t.Fatal(err)
			}
			var wantKeys []string
			for key, set := range map[string]bool{
				"minPrefixLength": tc.want.MinPrefixLength != nil, "maxPrefixLength": tc.want.MaxPrefixLength != nil,
				"maxRecordsPerClaim": tc.want.MaxRecordsPerClaim != nil, "reservations": tc.want.Reservations != nil,
				"reuseGracePeriodSeconds": tc.want.ReuseGracePeriodSeconds != nil,
			} {
				if set {
					wantKeys = append(wantKeys, key)
				}
			}
			var keys []string
			for key := range applied.Spec.AddressSpace[0].Pool {
				keys = append(keys, key)
			}
			slices.Sort(keys)
			slices.Sort(wantKeys)
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("Claim sent the pool fields %q, want %q: %s", keys, wantKeys, sent[0].GetPatch())
			}
			if patch := string(sent[0].GetPatch()); strings.Contains(patch, `"description":""`) {
				t.Errorf("Claim sent an empty description: %s", patch)
			}
		})
	}
}
