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
	// pool sets how a delegable record hands out its space: the lengths of
	// the sub-prefixes taken from it, how many one claim may hold, ranges
	// reserved from first fit, and how long a released sub-prefix rests
	// before another claim gets it. Only with delegable.
	// +optional
	Pool *PoolPolicy `json:"pool,omitempty" protobuf:"bytes,8,opt,name=pool"`
	// description says what the range is for, in at most 255 characters.
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,7,opt,name=description"`
}

// PoolPolicy is how a delegable record hands out its space. It applies to
// the records taken from it directly (with from naming its claim), pool
// records and exact sub-prefixes alike; what was allocated before the
// policy changed stays allocated.
type PoolPolicy struct {
	// minPrefixLength is the shortest sub-prefix taken from this record,
	// that is the largest block: 16 hands out nothing larger than a /16.
	// Unset: any prefix longer than the record's own.
	// +optional
	MinPrefixLength *int32 `json:"minPrefixLength,omitempty" protobuf:"varint,1,opt,name=minPrefixLength"`
	// maxPrefixLength is the longest sub-prefix taken from this record,
	// that is the smallest block: 24 hands out nothing smaller than a
	// /24, so that nobody fills the pool with /30s. Unset: up to a single
	// address (/32, /128).
	// +optional
	MaxPrefixLength *int32 `json:"maxPrefixLength,omitempty" protobuf:"varint,2,opt,name=maxPrefixLength"`
	// maxRecordsPerClaim is how many records one claim may hold from this
	// record, e.g. 2 for one pod range and one spare. Unset: no limit
	// beyond a claim's 64 records.
	// +optional
	MaxRecordsPerClaim *int32 `json:"maxRecordsPerClaim,omitempty" protobuf:"varint,3,opt,name=maxRecordsPerClaim"`
	// reservations are sub-ranges that first fit never hands out: a
	// gateway range, a legacy block, room kept for later. A record that
	// names a reserved prefix exactly (prefix with from) gets it, as any
	// other sub-prefix: a reservation keeps space from being chosen, not
	// from being asked for. At most 64, none overlapping another.
	// +listType=map
	// +listMapKey=prefix
	// +optional
	Reservations []PoolReservation `json:"reservations,omitempty" protobuf:"bytes,4,rep,name=reservations"`
	// reuseGracePeriodSeconds is how long a sub-prefix released by one
	// claim rests before another claim gets it, while routes to its
	// previous holder may still exist. The claim that released it may take
	// it back at once. Unset or 0: reused at once. At most 2592000 (30 days).
	// +optional
	ReuseGracePeriodSeconds *int64 `json:"reuseGracePeriodSeconds,omitempty" protobuf:"varint,5,opt,name=reuseGracePeriodSeconds"`
}

// PoolReservation is a sub-range of a pool that first fit never hands out.
type PoolReservation struct {
	// prefix is the reserved range, inside the pool's prefix, e.g.
	// 10.0.0.0/24.
	// +required
	Prefix string `json:"prefix" protobuf:"bytes,1,opt,name=prefix"`
	// description says what the range is kept for, in at most 255
	// characters.
	// +optional
	Description string `json:"description,omitempty" protobuf:"bytes,2,opt,name=description"`
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
	// PoolExhausted, PoolNotFound, PoolPolicy or ReuseGracePeriod.
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
	// pool is, for an allocated delegable record, how much of it is
	// taken: the registry updates it within seconds of a change.
	// +optional
	Pool *PoolStatus `json:"pool,omitempty" protobuf:"bytes,13,opt,name=pool"`
}

// PoolStatus is how full a delegable record is. Address counts are
// decimal strings, as exact as the addresses: an IPv6 pool holds more
// addresses than 64 bits can count (a /32 holds 2^96). allocated,
// reserved, cooling and free add up to addresses.
type PoolStatus struct {
	// addresses is the number of addresses of the record's prefix, e.g.
	// "16777216" for a /8 of IPv4.
	// +required
	Addresses string `json:"addresses" protobuf:"bytes,1,opt,name=addresses"`
	// allocated counts the addresses of the sub-prefixes allocated inside
	// the record: those taken from it, and any others inside it.
	// +required
	Allocated string `json:"allocated" protobuf:"bytes,2,opt,name=allocated"`
	// reserved counts the addresses of its reservations not allocated.
	// +required
	Reserved string `json:"reserved" protobuf:"bytes,3,opt,name=reserved"`
	// cooling counts the addresses released within the reuse grace period,
	// and neither allocated nor reserved.
	// +required
	Cooling string `json:"cooling" protobuf:"bytes,4,opt,name=cooling"`
	// free counts the addresses that first fit may hand out.
	// +required
	Free string `json:"free" protobuf:"bytes,5,opt,name=free"`
	// usedPercent is the part of the record first fit cannot hand out
	// (allocated, reserved or cooling), in percent rounded down: 0 to 100.
	// +required
	UsedPercent int32 `json:"usedPercent" protobuf:"varint,6,opt,name=usedPercent"`
	// largestFreePrefix is the largest free block, the lowest if several
	// are as large: the shortest prefix a record could be given now, e.g.
	// 10.128.0.0/9. Empty when nothing is free.
	// +optional
	LargestFreePrefix string `json:"largestFreePrefix,omitempty" protobuf:"bytes,7,opt,name=largestFreePrefix"`
	// subPrefixes counts the allocated records taken from this record.
	// +required
	SubPrefixes int32 `json:"subPrefixes" protobuf:"varint,8,opt,name=subPrefixes"`
	// tenants counts the claims that hold them.
	// +required
	Tenants int32 `json:"tenants" protobuf:"varint,9,opt,name=tenants"`
	// coolingPrefixes lists the sub-prefixes in their reuse grace period, soonest
	// reusable first: the registry reads them back after a restart. At most
	// 256; beyond that the ones reusable soonest are dropped.
	// +listType=map
	// +listMapKey=prefix
	// +optional
	CoolingPrefixes []CoolingPrefix `json:"coolingPrefixes,omitempty" protobuf:"bytes,10,rep,name=coolingPrefixes"`
}

// CoolingPrefix is a released sub-prefix in its reuse grace period.
type CoolingPrefix struct {
	// prefix is the released sub-prefix.
	// +required
	Prefix string `json:"prefix" protobuf:"bytes,1,opt,name=prefix"`
	// claim is the NetworkClaim that released it: the one claim that may
	// take it again before reusableAt.
	// +required
	Claim string `json:"claim" protobuf:"bytes,2,opt,name=claim"`
	// reusableAt is when another claim may be given it.
	// +required
	ReusableAt metav1.Time `json:"reusableAt" protobuf:"bytes,3,opt,name=reusableAt"`
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
	// ReasonPoolPolicy: the record breaks the policy of the pool it is
	// taken from: a prefix length outside the pool's bounds, or more
	// records from it than one claim may hold.
	ReasonPoolPolicy = "PoolPolicy"
	// ReasonReuseGracePeriod: the prefix was released by another claim
	// within its pool's reuse grace period; the record gets it once that
	// ends.
	ReasonReuseGracePeriod = "ReuseGracePeriod"
)

const (
	// ConditionPoolPressure is True while one of the claim's delegable
	// records is at least 80% used (usedPercent), with the reason
	// ReasonAbove80Percent or ReasonAbove95Percent; False below, with
	// ReasonBelow80Percent. Claims without an allocated delegable record
	// do not have it.
	ConditionPoolPressure = "PoolPressure"
	// ReasonAbove80Percent: a pool is 80% to 95% used.
	ReasonAbove80Percent = "Above80Percent"
	// ReasonAbove95Percent: a pool is at least 95% used.
	ReasonAbove95Percent = "Above95Percent"
	// ReasonBelow80Percent: every pool is less than 80% used.
	ReasonBelow80Percent = "Below80Percent"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NetworkClaimList is a list of NetworkClaims.
type NetworkClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []NetworkClaim `json:"items" protobuf:"bytes,2,rep,name=items"`
}
