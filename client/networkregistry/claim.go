package networkregistry

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
)

// Record is one record a component claims: a prefix it names, or any free
// prefix of a length taken from another claim's delegable prefix (a pool
// record). Its fields are those of the API's record (spec.addressSpace[i]),
// with prefixes parsed.
type Record struct {
	// Name tells the record apart from the claim's others: a DNS label,
	// e.g. pods-v4, unique in the claim. Required for a pool record,
	// whose prefix the registry chooses; optional otherwise.
	Name string
	// Prefix is the claimed prefix, in canonical form (no host bits set),
	// e.g. 10.96.0.0/12. Zero for a pool record.
	Prefix netip.Prefix
	// From names the claim, and optionally which of its delegable
	// prefixes, the record is taken from. Required for a pool record. With
	// Prefix, it says Prefix is a sub-prefix delegated by that claim, so
	// that it does not conflict with it.
	From *PrefixSource
	// PrefixLength asks, with From and without Prefix, for the lowest free
	// prefix of this length inside the pool (first fit), e.g. 16 for a
	// /16. 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one.
	PrefixLength int
	// Delegable lets other claims take sub-prefixes of the record's
	// prefix, naming this claim in their From.
	Delegable bool
	// Pool is how a delegable record hands out its space; nil for no
	// policy. Only with Delegable.
	Pool *PoolPolicy
	// Reference names the resource the range is for, e.g. group "" and
	// resource "services"; nil for none.
	Reference *v1alpha1.ResourceReference
	// Description says what the range is for, in at most 255 characters.
	Description string
}

// PrefixSource names the delegable prefix a record is taken from.
type PrefixSource struct {
	// Claim is the NetworkClaim that holds the delegable prefix.
	Claim string
	// Prefix picks one of the claim's delegable prefixes, e.g. 10.0.0.0/8;
	// zero takes from the first of them, in the claim's spec order, that
	// has room for the record.
	Prefix netip.Prefix
}

// PoolPolicy is how a delegable record hands out its space: the API's
// spec.addressSpace[i].pool, with prefixes parsed and the grace period a
// duration. A zero field is unset. The registry applies it to the records
// taken from the delegable record directly; a record that breaks it waits,
// Unavailable with the reason PoolPolicy.
type PoolPolicy struct {
	// MinPrefixLength is the shortest sub-prefix handed out, that is the
	// largest block: 16 hands out nothing larger than a /16.
	MinPrefixLength int
	// MaxPrefixLength is the longest sub-prefix handed out, that is the
	// smallest block: 24 hands out nothing smaller than a /24.
	MaxPrefixLength int
	// MaxRecordsPerClaim is how many records one claim may hold from the
	// delegable record, 1 to 64.
	MaxRecordsPerClaim int
	// Reservations are sub-ranges that first fit never hands out; a record
	// that names one exactly (Prefix with From) still gets it.
	Reservations []Reservation
	// ReuseGracePeriod is how long a sub-prefix released by one claim
	// rests before another claim gets it, at most 30 days. The API counts
	// it in seconds: a fraction of a second is rounded up.
	ReuseGracePeriod time.Duration
}

// Reservation is a sub-range of a pool that first fit never hands out.
type Reservation struct {
	// Prefix is the reserved range, inside the delegable record's prefix,
	// e.g. 10.255.0.0/16.
	Prefix netip.Prefix
	// Description says what the range is kept for, in at most 255
	// characters.
	Description string
}

// Claim creates or updates the NetworkClaim name so that the records this
// Registry's field manager owns in its spec are exactly records: it applies
// them by server-side apply, taking over the fields from other managers
// (Force). Records that other field managers applied to the same claim stay.
// It returns the claim as written; the registry decides on it afterwards, see
// WaitForAllocation, WaitForPrefix and WaitForDecision.
//
// It validates the claim before it writes, as the API server does (see
// ValidateClaim), and returns what the server would: an error for which
// apierrors.IsInvalid is true, naming each field refused (records[i] is
// spec.addressSpace[i]) and what to write instead.
func (r *Registry) Claim(ctx context.Context, name string, records []Record) (*v1alpha1.NetworkClaim, error) {
	if r.fieldManager == "" {
		return nil, fmt.Errorf("NetworkClaim %s: the Registry has no field manager to claim with; pass New or NewForConfig your component's name, e.g. \"my-cni\"", name)
	}
	claim := claimOf(name, records)
	if errs := validate(claim); len(errs) > 0 {
		return nil, apierrors.NewInvalid(v1alpha1.SchemeGroupVersion.WithKind("NetworkClaim").GroupKind(), name, errs)
	}
	spec := applyv1alpha1.NetworkClaimSpec()
	for _, record := range claim.Spec.AddressSpace {
		spec.WithAddressSpace(applyRecord(record))
	}
	r.startClaiming(name)
	applied, err := r.client.NetworkingV1alpha1().NetworkClaims().Apply(ctx,
		applyv1alpha1.NetworkClaim(name).WithSpec(spec),
		metav1.ApplyOptions{FieldManager: r.fieldManager, Force: true})
	if err != nil {
		r.finishClaiming(name, nil)
		return nil, fmt.Errorf("claiming NetworkClaim %s: %w", name, err)
	}
	r.finishClaiming(name, applied)
	return applied, nil
}

// ValidateClaim returns what the API server would refuse in a NetworkClaim
// name whose spec holds records, with the API's validation: each error
// names the field (records[i] is spec.addressSpace[i]) and says what to
// write instead. Claim calls it before it writes; a tool that takes records
// from its user can call it to say what is wrong before it connects.
//
// Records that other field managers applied to the same claim are not
// known here: that the records overlap none of them is the server's to
// check.
func ValidateClaim(name string, records []Record) field.ErrorList {
	return validate(claimOf(name, records))
}

// claimOf is the NetworkClaim name holding records, as Claim applies it.
func claimOf(name string, records []Record) *v1alpha1.NetworkClaim {
	claim := &v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, record := range records {
		claim.Spec.AddressSpace = append(claim.Spec.AddressSpace, specRecord(record))
	}
	return claim
}

// specRecord is the API's record for record. A record without Prefix asks
// for its PrefixLength once it has From or a length, so that a pool record
// without a length is refused as one rather than as a record without a
// prefix.
func specRecord(record Record) v1alpha1.AddressSpaceRecord {
	out := v1alpha1.AddressSpaceRecord{
		Name:        record.Name,
		Reference:   record.Reference.DeepCopy(),
		Delegable:   record.Delegable,
		Description: record.Description,
	}
	if record.Prefix.IsValid() {
		out.Prefix = record.Prefix.String()
	}
	if record.PrefixLength != 0 || (record.From != nil && !record.Prefix.IsValid()) {
		// Out of range either way; clamped, so that it stays so.
		n := int32(min(max(record.PrefixLength, math.MinInt32), math.MaxInt32))
		out.PrefixLength = &n
	}
	if from := record.From; from != nil {
		out.From = &v1alpha1.PrefixSource{Claim: from.Claim}
		if from.Prefix.IsValid() {
			out.From.Prefix = from.Prefix.String()
		}
	}
	out.Pool = specPolicy(record.Pool)
	return out
}

// specPolicy is the API's pool policy for policy. Values out of range are
// kept so (clamped to int32), so that validation refuses them.
func specPolicy(policy *PoolPolicy) *v1alpha1.PoolPolicy {
	if policy == nil {
		return nil
	}
	out := &v1alpha1.PoolPolicy{
		MinPrefixLength:    optionalInt32(policy.MinPrefixLength),
		MaxPrefixLength:    optionalInt32(policy.MaxPrefixLength),
		MaxRecordsPerClaim: optionalInt32(policy.MaxRecordsPerClaim),
	}
	for _, r := range policy.Reservations {
		reservation := v1alpha1.PoolReservation{Description: r.Description}
		if r.Prefix.IsValid() {
			reservation.Prefix = r.Prefix.String()
		}
		out.Reservations = append(out.Reservations, reservation)
	}
	if d := policy.ReuseGracePeriod; d != 0 {
		// Rounded up, so that a prefix rests at least as long as asked;
		// a negative duration stays negative, for validation to refuse.
		seconds := int64(d / time.Second)
		if d%time.Second > 0 {
			seconds++
		} else if seconds == 0 {
			seconds = -1
		}
		out.ReuseGracePeriodSeconds = &seconds
	}
	return out
}

// optionalInt32 is n as an optional API field: nil for 0, clamped to int32
// otherwise.
func optionalInt32(n int) *int32 {
	if n == 0 {
		return nil
	}
	v := int32(min(max(n, math.MinInt32), math.MaxInt32))
	return &v
}

// validate runs the API server's validation of a new claim.
func validate(claim *v1alpha1.NetworkClaim) field.ErrorList {
	var internal networking.NetworkClaim
	if err := v1alpha1.Convert_v1alpha1_NetworkClaim_To_networking_NetworkClaim(claim, &internal, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateNetworkClaim(&internal)
}

// applyRecord is the apply configuration of a spec record. Fields at their
// zero value are not sent, so that this field manager does not own them.
func applyRecord(record v1alpha1.AddressSpaceRecord) *applyv1alpha1.AddressSpaceRecordApplyConfiguration {
	ac := applyv1alpha1.AddressSpaceRecord()
	if record.Name != "" {
		ac.WithName(record.Name)
	}
	if record.Prefix != "" {
		ac.WithPrefix(record.Prefix)
	}
	if record.PrefixLength != nil {
		ac.WithPrefixLength(*record.PrefixLength)
	}
	if from := record.From; from != nil {
		source := applyv1alpha1.PrefixSource().WithClaim(from.Claim)
		if from.Prefix != "" {
			source.WithPrefix(from.Prefix)
		}
		ac.WithFrom(source)
	}
	if record.Delegable {
		ac.WithDelegable(true)
	}
	if policy := record.Pool; policy != nil {
		ac.WithPool(applyPolicy(policy))
	}
	if record.Reference != nil {
		ac.WithReference(applyv1alpha1.ResourceReference().
			WithGroup(record.Reference.Group).
			WithResource(record.Reference.Resource))
	}
	if record.Description != "" {
		ac.WithDescription(record.Description)
	}
	return ac
}

// applyPolicy is the apply configuration of a pool policy; as for records,
// unset fields are not sent.
func applyPolicy(policy *v1alpha1.PoolPolicy) *applyv1alpha1.PoolPolicyApplyConfiguration {
	ac := applyv1alpha1.PoolPolicy()
	if n := policy.MinPrefixLength; n != nil {
		ac.WithMinPrefixLength(*n)
	}
	if n := policy.MaxPrefixLength; n != nil {
		ac.WithMaxPrefixLength(*n)
	}
	if n := policy.MaxRecordsPerClaim; n != nil {
		ac.WithMaxRecordsPerClaim(*n)
	}
	for _, r := range policy.Reservations {
		reservation := applyv1alpha1.PoolReservation().WithPrefix(r.Prefix)
		if r.Description != "" {
			reservation.WithDescription(r.Description)
		}
		ac.WithReservations(reservation)
	}
	if n := policy.ReuseGracePeriodSeconds; n != nil {
		ac.WithReuseGracePeriodSeconds(*n)
	}
	return ac
}
