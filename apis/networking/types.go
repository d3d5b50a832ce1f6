package networking

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkClaim records the IP address space a component claims. The registry
// allocates each claimed prefix that overlaps no prefix already allocated to
// another claim, and marks the others unavailable, naming their holder.
type NetworkClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the component claims.
	Spec NetworkClaimSpec `json:"spec"`

	// status is what the registry decided; only the registry writes it.
	// +optional
	Status NetworkClaimStatus `json:"status,omitempty"`
}

// NetworkClaimSpec lists the prefixes a component claims.
type NetworkClaimSpec struct {
	// addressSpace lists the claimed prefixes, at most 64, none overlapping
	// another.
	// +listType=map
	// +listMapKey=prefix
	// +required
	AddressSpace []AddressSpaceRecord `json:"addressSpace"`
}

// AddressSpaceRecord is one claimed prefix.
type AddressSpaceRecord struct {
	// reference names the resource the range is for, e.g. group "" and
	// resource "services" for a Service ClusterIP range.
	// +optional
	Reference *ResourceReference `json:"reference,omitempty"`
	// prefix is an IPv4 or IPv6 CIDR in canonical form, e.g. 10.96.0.0/12
	// or fd00:10:96::/112.
	// +required
	Prefix string `json:"prefix"`
	// description says what the range is for, in at most 255 characters.
	// +optional
	Description string `json:"description,omitempty"`
}

// ResourceReference names a resource by group and plural name.
type ResourceReference struct {
	// group is the resource's API group; empty for the core group.
	// +optional
	Group string `json:"group"`
	// resource is the plural resource name, e.g. services.
	// +required
	Resource string `json:"resource"`
}

// NetworkClaimStatus is the registry's record of a claim.
type NetworkClaimStatus struct {
	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// addressSpace has one record per spec record, in the same order.
	// +listType=map
	// +listMapKey=prefix
	// +optional
	AddressSpace []AddressSpaceStatus `json:"addressSpace,omitempty"`
	// conditions: Ready is True when every record is allocated, and False
	// with reason Conflict otherwise.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AddressSpaceStatus is the registry's decision on one claimed prefix.
type AddressSpaceStatus struct {
	// reference is the spec record's reference.
	// +optional
	Reference *ResourceReference `json:"reference,omitempty"`
	// prefix is the spec record's prefix.
	// +required
	Prefix string `json:"prefix"`
	// description is the spec record's description.
	// +optional
	Description string `json:"description,omitempty"`
	// date is when the record got its current status: when it was
	// allocated, or since when it waits.
	// +required
	Date metav1.Time `json:"date"`
	// status is Allocated or Unavailable.
	// +required
	Status AllocationStatus `json:"status"`
	// message says why the prefix is unavailable, naming the claim that
	// holds an overlapping prefix.
	// +optional
	Message string `json:"message,omitempty"`
}

// AllocationStatus is the registry's decision on a prefix.
// +enum
type AllocationStatus string

const (
	// AllocationAllocated: the prefix is this claim's for as long as it stays in spec.
	AllocationAllocated AllocationStatus = "Allocated"
	// AllocationUnavailable: the prefix overlaps a prefix allocated to another claim.
	AllocationUnavailable AllocationStatus = "Unavailable"
)

const (
	// ConditionReady is True when every record of the claim is allocated.
	ConditionReady = "Ready"
	// ReasonConflict: some record overlaps a prefix held by another claim.
	ReasonConflict = "Conflict"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkClaimList is a list of NetworkClaims.
type NetworkClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []NetworkClaim `json:"items"`
}
