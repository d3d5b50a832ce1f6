package v1alpha1

import "testing"

func TestRecordKey(t *testing.T) {
	length := int32(16)
	for _, tc := range []struct {
		name       string
		spec       AddressSpaceRecord
		status     AddressSpaceStatus
		want       RecordKey
		wantString string
	}{
		{
			name:   "exact record without a name",
			spec:   AddressSpaceRecord{Prefix: "10.96.0.0/12", Description: "not part of the key"},
			status: AddressSpaceStatus{Prefix: "10.96.0.0/12", Status: AllocationAllocated},
			want:   RecordKey{Prefix: "10.96.0.0/12"}, wantString: "10.96.0.0/12",
		},
		{
			name:   "named exact record",
			spec:   AddressSpaceRecord{Name: "services", Prefix: "10.96.0.0/12"},
			status: AddressSpaceStatus{Name: "services", Prefix: "10.96.0.0/12"},
			want:   RecordKey{Name: "services", Prefix: "10.96.0.0/12"}, wantString: "services 10.96.0.0/12",
		},
		{
			// Its status has the prefix chosen: another key.
			name:   "record taken from a pool, waiting",
			spec:   AddressSpaceRecord{Name: "pods-v4", PrefixLength: &length, From: &PrefixSource{Claim: "org-pods"}},
			status: AddressSpaceStatus{Name: "pods-v4", Status: AllocationUnavailable},
			want:   RecordKey{Name: "pods-v4"}, wantString: "pods-v4",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.Key(); got != tc.want {
				t.Errorf("spec record key %+v, want %+v", got, tc.want)
			}
			if got := tc.status.Key(); got != tc.want {
				t.Errorf("status record key %+v, want %+v", got, tc.want)
			}
			if got := tc.want.String(); got != tc.wantString {
				t.Errorf("String() = %q, want %q", got, tc.wantString)
			}
		})
	}
}
