package v1alpha1

// RecordKey identifies a record in a NetworkClaim's spec.addressSpace or
// status.addressSpace as the API server does: both lists are maps keyed by
// name and prefix together (+listMapKey=name, +listMapKey=prefix), so that
// server-side apply takes two records for one only when both are equal.
// Either may be empty: a record that names its prefix need not have a name,
// and a record taken from a pool has no prefix in spec.
//
// Validation keeps the keys of a spec unique, and more: no two of its
// records share a name or a prefix. The key does not pair a spec record with
// its status record: the status of a record taken from a pool has the
// prefix the registry chose, which the spec record has not
// (networkregistry.Decisions pairs them).
//
// +k8s:deepcopy-gen=false
// +k8s:openapi-gen=false
// +protobuf=false
type RecordKey struct {
	Name   string
	Prefix string
}

// Key is the record's key in spec.addressSpace.
func (r *AddressSpaceRecord) Key() RecordKey {
	return RecordKey{Name: r.Name, Prefix: r.Prefix}
}

// Key is the record's key in status.addressSpace.
func (s *AddressSpaceStatus) Key() RecordKey {
	return RecordKey{Name: s.Name, Prefix: s.Prefix}
}

// String names the record in messages: "pods-v4", "10.96.0.0/12", or both,
// "pods-v4 10.0.0.0/16".
func (k RecordKey) String() string {
	switch {
	case k.Name == "":
		return k.Prefix
	case k.Prefix == "":
		return k.Name
	}
	return k.Name + " " + k.Prefix
}
