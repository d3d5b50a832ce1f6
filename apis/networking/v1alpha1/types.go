package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkClaim records the IP address space a component claims. The registry
// allocates each claimed prefix that overlaps no prefix already allocated to
// another claim (except the delegable prefix it is taken from), chooses
// prefixes for the records taken from pools, and marks the others
// unavailable, saying why.
type NetworkClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is what the component claims.
	Spec NetworkClaimSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`

	// status is what the registry decided; only the registry writes it.
	// +optional
	Status NetworkClaimStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// NetworkClaimSpec lists the prefixes a component claims.
type NetworkClaimSpec struct {
	// addressSpace lists the claimed records, at most 64: prefixes, none
	// overlapping another, and records taken from pools, each with a name.
	// +listType=map
	// +listMapKey=name
	// +listMapKey=prefix
	// +required
	AddressSpace []AddressSpaceRecord `json:"addressSpace" protobuf:"bytes,1,rep,name=addressSpace"`
}

// AddressSpaceRecord is one claimed prefix: either a prefix named exactly,
// or "any free prefix of length prefixLength" taken from a delegable record
// of another claim (a pool).
type AddressSpaceRecord struct {
	// name tells the record apart from the claim's others. Required for a
	// record taken from a pool (from and prefixLength), optional otherwise;
	// a DNS label (e.g. pods-v4), unique in the claim.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// reference names the resource the range is for, e.g. group "" and
	// resource "services" for a Service ClusterIP range.
	// +optional
	Reference *ResourceReference `json:"reference,omitempty" protobuf:"bytes,2,opt,name=reference"`
	// prefix is an IPv4 or IPv6 CIDR in canonical form, e.g. 10.96.0.0/12
	// or fd00:10:96::/112. Write either prefix, or prefixLength with from
	// to let the registry choose the prefix.
	// +optional
	Prefix string `json:"prefix,omitempty" protobuf:"bytes,3,opt,name=prefix"`
	// prefixLength asks for any free prefix of this length inside the pool
	// that from names: the registry picks the lowest free one (first fit),
	// records it in status, and keeps it for as long as the record stays in
	// spec. At most 32 for an IPv4 pool, 128 for an IPv6 one, and longer
	// than the pool's own prefix: a sub-prefix is smaller than its pool.
	// +optional
	PrefixLength *int32 `json:"prefixLength,omitempty" protobuf:"varint,4,opt,name=prefixLength"`
	// from names the claim, and optionally which of its delegable records,
	// this record is taken from. Required with prefixLength. With prefix,
	// it says that prefix is a sub-prefix (strictly inside) delegated by
	// that claim, which then does not conflict with it; without from, a prefix that overlaps
	// any other claim's allocation conflicts, delegable or not.
	// +optional
	From *PrefixSource `json:"from,omitempty" protobuf:"bytes,5,opt,name=from"`
	// delegable lets other claims take sub-prefixes of this record's
	// prefix (with from naming this claim): its holder delegates them, as
	// IANA delegates blocks to regional registries.
	// +optional
	Delegable bool `json:"delegable,omitempty" protobuf:"varint,6,opt,name=delegable"`
	// description says what the range is for, in at most 255 characters.
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,7,opt,name=description"`
}

// PrefixSource names the delegable record a sub-prefix is taken from.
type PrefixSource struct {
	// claim is the NetworkClaim that holds the delegable record.
	// +required
	Claim string `json:"claim" protobuf:"bytes,1,opt,name=claim"`
	// prefix picks one of the claim's delegable prefixes, e.g. 10.0.0.0/8;
	// empty takes from the first of them, in the claim's spec order, that
	// has room for the record.
	// +optional
	Prefix string `json:"prefix,omitempty" protobuf:"bytes,2,opt,name=prefix"`
}

// ResourceReference names a resource by group and plural name.
type ResourceReference struct {
	// group is the resource's API group; empty for the core group.
	// +optional
	Group string `json:"group" protobuf:"bytes,1,opt,name=group"`
	// resource is the plural resource name, e.g. services.
	// +required
	Resource string `json:"resource" protobuf:"bytes,2,opt,name=resource"`
}

// NetworkClaimStatus is the registry's record of a claim.
type NetworkClaimStatus struct {
	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	// addressSpace has one record per spec record, in the same order.
	// +listType=map
	// +listMapKey=name
	// +listMapKey=prefix
	// +optional
	AddressSpace []AddressSpaceStatus `json:"addressSpace,omitempty" protobuf:"bytes,2,rep,name=addressSpace"`
	// conditions: Ready is True when every record is allocated, and False
	// otherwise, with the reason of the first unavailable record.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,3,rep,name=conditions"`
}

// AddressSpaceStatus is the registry's decision on one spec record.
type AddressSpaceStatus struct {
	// name is the spec record's name.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	// reference is the spec record's reference.
	// +optional
	Reference *ResourceReference `json:"reference,omitempty" protobuf:"bytes,2,opt,name=reference"`
	// prefix is the prefix the record holds or waits for: the spec
	// record's prefix, or the one the registry chose from the pool; empty
	// while a pool record waits for room.
	// +optional
	Prefix string `json:"prefix,omitempty" protobuf:"bytes,3,opt,name=prefix"`
	// description is the spec record's description.
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,4,opt,name=description"`
	// delegable is the spec record's delegable.
	// +optional
	Delegable bool `json:"delegable,omitempty" protobuf:"varint,5,opt,name=delegable"`
	// date is when the record got its current status: when it was
	// allocated, or since when it waits.
	// +required
	Date metav1.Time `json:"date" protobuf:"bytes,6,opt,name=date"`
	// status is Allocated or Unavailable.
	// +required
	Status AllocationStatus `json:"status" protobuf:"bytes,7,opt,name=status,casttype=AllocationStatus"`
	// reason says, for an Unavailable record, why in one word: Conflict,
	// PoolExhausted or PoolNotFound.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,8,opt,name=reason"`
	// message says why the record is unavailable, for people.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,9,opt,name=message"`
	// conflictsWith is, for a record Unavailable with reason Conflict, the
	// allocation of another claim that it overlaps.
	// +optional
	ConflictsWith *ClaimedPrefix `json:"conflictsWith,omitempty" protobuf:"bytes,10,opt,name=conflictsWith"`
	// delegatedFrom is, for an allocated record taken from another
	// claim, the delegable allocation it lies in: one step of the
	// delegation chain.
	// +optional
	DelegatedFrom *ClaimedPrefix `json:"delegatedFrom,omitempty" protobuf:"bytes,11,opt,name=delegatedFrom"`
	// firstSeenResourceVersion is the claim's resourceVersion when the
	// registry first decided the record: etcd's order, in which waiting
	// records are allocated, first come, first served.
	// +optional
	FirstSeenResourceVersion string `json:"firstSeenResourceVersion,omitempty" protobuf:"bytes,12,opt,name=firstSeenResourceVersion"`
}

// ClaimedPrefix is a prefix and the claim that holds it.
type ClaimedPrefix struct {
	// claim is the NetworkClaim's name.
	// +required
	Claim string `json:"claim" protobuf:"bytes,1,opt,name=claim"`
	// prefix is the claim's allocated prefix.
	// +required
	Prefix string `json:"prefix" protobuf:"bytes,2,opt,name=prefix"`
}

// AllocationStatus is the registry's decision on a prefix.
// +enum
type AllocationStatus string

const (
	// AllocationAllocated: the prefix is this claim's for as long as it stays in spec.
	AllocationAllocated AllocationStatus = "Allocated"
	// AllocationUnavailable: the record waits, for the reason its reason
	// field gives.
	AllocationUnavailable AllocationStatus = "Unavailable"
)

const (
	// ConditionReady is True when every record of the claim is allocated.
	ConditionReady = "Ready"
	// ReasonAllocated: Ready is True, every record is allocated.
	ReasonAllocated = "Allocated"
	// ReasonConflict: the record overlaps a prefix held by another claim.
	ReasonConflict = "Conflict"
	// ReasonPoolExhausted: the pool the record is taken from has no free
	// prefix of the length it asks for.
	ReasonPoolExhausted = "PoolExhausted"
	// ReasonPoolNotFound: the claim the record is taken from holds no
	// allocated delegable prefix that could hold it.
	ReasonPoolNotFound = "PoolNotFound"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkClaimList is a list of NetworkClaims.
type NetworkClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []NetworkClaim `json:"items" protobuf:"bytes,2,rep,name=items"`
}
