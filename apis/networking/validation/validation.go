// Package validation checks NetworkClaims. Every error names the field and
// says what to write instead.
package validation

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

const (
	// MaxRecords is the most prefixes one claim may hold.
	MaxRecords = 64
	// MaxDescriptionLength bounds a record's description.
	MaxDescriptionLength = 255
	// MaxReservations is the most reservations one pool may have.
	MaxReservations = 64
	// MaxReuseGracePeriodSeconds bounds a pool's reuse grace period: 30 days.
	MaxReuseGracePeriodSeconds = 30 * 24 * 60 * 60
	// MaxCoolingPrefixes is the most cooling prefixes a pool's status lists.
	MaxCoolingPrefixes = 256
)

// ValidateNetworkClaim validates a new claim.
func ValidateNetworkClaim(claim *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&claim.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateNetworkClaimSpec(claim.Name, &claim.Spec, field.NewPath("spec"))...)
}

// ValidateNetworkClaimUpdate validates a change of a claim's metadata and spec.
func ValidateNetworkClaimUpdate(claim, old *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateNetworkClaimSpec(claim.Name, &claim.Spec, field.NewPath("spec"))...)
}

// ValidateNetworkClaimStatusUpdate validates what the registry writes to status.
func ValidateNetworkClaimStatusUpdate(claim, old *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	status := &claim.Status
	if status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("observedGeneration"), status.ObservedGeneration, "must not be negative"))
	}
	// The list's map keys: server-side apply holds one record per key.
	keys := sets.New[v1alpha1.RecordKey]()
	for i, record := range status.AddressSpace {
		path := fldPath.Child("addressSpace").Index(i)
		errs = append(errs, validateRecordName(record.Name, path.Child("name"))...)
		switch {
		case record.Prefix != "":
			if _, err := validatePrefix(record.Prefix, path.Child("prefix")); err != nil {
				errs = append(errs, err)
			}
		case record.Name == "":
			errs = append(errs, field.Required(path.Child("prefix"), "write the record's prefix, or its name while it has none"))
		}
		if key := (v1alpha1.RecordKey{Name: record.Name, Prefix: record.Prefix}); keys.Has(key) {
			errs = append(errs, field.Duplicate(path, key.String()))
		} else {
			keys.Insert(key)
		}
		switch record.Status {
		case networking.AllocationAllocated:
			if record.Prefix == "" {
				errs = append(errs, field.Required(path.Child("prefix"), "an allocated record names its prefix"))
			}
		case networking.AllocationUnavailable:
			if record.Message == "" {
				errs = append(errs, field.Required(path.Child("message"), "say why the record is unavailable, e.g. naming the claim that holds an overlapping prefix"))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child("status"), record.Status, []string{string(networking.AllocationAllocated), string(networking.AllocationUnavailable)}))
		}
		if reasons := []string{networking.ReasonConflict, networking.ReasonPoolExhausted, networking.ReasonPoolNotFound, networking.ReasonPoolPolicy, networking.ReasonReuseGracePeriod}; record.Reason != "" && !slices.Contains(reasons, record.Reason) {
			errs = append(errs, field.NotSupported(path.Child("reason"), record.Reason, reasons))
		}
		errs = append(errs, validatePoolStatus(record.Pool, path.Child("pool"))...)
		errs = append(errs, validateClaimedPrefix(record.ConflictsWith, path.Child("conflictsWith"))...)
		errs = append(errs, validateClaimedPrefix(record.DelegatedFrom, path.Child("delegatedFrom"))...)
		if rv := record.FirstSeenResourceVersion; rv != "" {
			if n, err := strconv.ParseUint(rv, 10, 64); err != nil || n == 0 || strconv.FormatUint(n, 10) != rv {
				errs = append(errs, field.Invalid(path.Child("firstSeenResourceVersion"), rv, "must be a resourceVersion: a positive integer without leading zeros"))
			}
		}
		errs = append(errs, validateReference(record.Reference, path.Child("reference"))...)
		errs = append(errs, validateTime(record.Date, path.Child("date"))...)
	}
	for i, c := range status.Conditions {
		errs = append(errs, validateTime(c.LastTransitionTime, fldPath.Child("conditions").Index(i).Child("lastTransitionTime"))...)
	}
	return append(errs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
}

// ValidateNetworkClaimSpec validates the records of the claim name.
func ValidateNetworkClaimSpec(name string, spec *networking.NetworkClaimSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	listPath := fldPath.Child("addressSpace")
	switch n := len(spec.AddressSpace); {
	case n == 0:
		errs = append(errs, field.Required(listPath, "claim at least one prefix, e.g. addressSpace: [{prefix: 10.96.0.0/12}]"))
	case n > MaxRecords:
		errs = append(errs, field.TooMany(listPath, n, MaxRecords))
	}
	type parsed struct {
		index  int
		prefix netip.Prefix
	}
	var valid []parsed
	names := map[string]int{}
	for i, record := range spec.AddressSpace {
		path := listPath.Index(i)
		errs = append(errs, validateRecordName(record.Name, path.Child("name"))...)
		if record.Name != "" {
			if j, ok := names[record.Name]; ok {
				errs = append(errs, field.Invalid(path.Child("name"), record.Name, fmt.Sprintf("is also the name of addressSpace[%d]: give each record its own name", j)))
			} else {
				names[record.Name] = i
			}
		}
		switch {
		case record.Prefix != "" && record.PrefixLength != nil:
			errs = append(errs, field.Invalid(path.Child("prefixLength"), *record.PrefixLength, "write either prefix, to claim that prefix, or prefixLength with from, to let the registry choose one from a pool; not both"))
		case record.Prefix != "":
			prefix, err := validatePrefix(record.Prefix, path.Child("prefix"))
			if err != nil {
				errs = append(errs, err)
				break
			}
			for _, other := range valid {
				if prefix == other.prefix {
					errs = append(errs, field.Duplicate(path.Child("prefix"), record.Prefix))
				} else if prefix.Overlaps(other.prefix) {
					errs = append(errs, field.Invalid(path.Child("prefix"), record.Prefix,
						fmt.Sprintf("overlaps %s (addressSpace[%d]); the records of one claim must not overlap: claim the larger prefix alone, or split it", other.prefix, other.index)))
				}
			}
			valid = append(valid, parsed{i, prefix})
		case record.PrefixLength != nil:
			if record.Name == "" {
				errs = append(errs, field.Required(path.Child("name"), "name a record taken from a pool, e.g. name: pods-v4; its prefix is chosen by the registry, so the name tells it apart"))
			}
			if record.From == nil {
				errs = append(errs, field.Required(path.Child("from"), "name the claim to take the prefix from, e.g. from: {claim: org-pods}"))
			}
			if n := *record.PrefixLength; n < 1 || n > 128 {
				errs = append(errs, field.Invalid(path.Child("prefixLength"), n, "must be 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one (a sub-prefix is smaller than its pool), e.g. 16 for a /16"))
			}
		default:
			errs = append(errs, field.Required(path.Child("prefix"), "write a prefix such as 10.96.0.0/12, or prefixLength with from to take one from another claim's delegable prefix"))
		}
		errs = append(errs, validateSource(name, record, path)...)
		errs = append(errs, validatePoolPolicy(record, path)...)
		if len(record.Description) > MaxDescriptionLength {
			errs = append(errs, field.TooLong(path.Child("description"), "", MaxDescriptionLength))
		}
		errs = append(errs, validateReference(record.Reference, path.Child("reference"))...)
	}
	return errs
}

// validateSource checks a record's from: a claim other than claim itself,
// and a pool prefix that can hold what the record asks for.
func validateSource(claim string, record networking.AddressSpaceRecord, path *field.Path) field.ErrorList {
	from := record.From
	if from == nil {
		return nil
	}
	fromPath := path.Child("from")
	var errs field.ErrorList
	switch {
	case from.Claim == "":
		errs = append(errs, field.Required(fromPath.Child("claim"), "name the NetworkClaim whose delegable prefix this record is taken from, e.g. org-pods"))
	case from.Claim == claim:
		errs = append(errs, field.Invalid(fromPath.Child("claim"), from.Claim, "must name another claim: a claim's own records never conflict with each other's space; claim the sub-prefix without from"))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(from.Claim) {
			errs = append(errs, field.Invalid(fromPath.Child("claim"), from.Claim, msg+"; write a NetworkClaim's name, e.g. org-pods"))
		}
	}
	if from.Prefix == "" {
		return errs
	}
	pool, err := validatePrefix(from.Prefix, fromPath.Child("prefix"))
	if err != nil {
		return append(errs, err)
	}
	if record.PrefixLength != nil {
		if n := int(*record.PrefixLength); n <= pool.Bits() || n > pool.Addr().BitLen() {
			errs = append(errs, field.Invalid(path.Child("prefixLength"), n, fmt.Sprintf("must fit strictly inside the pool %s: write %d to %d", pool, pool.Bits()+1, pool.Addr().BitLen())))
		}
	}
	if p, err := netip.ParsePrefix(record.Prefix); err == nil && (p.Bits() <= pool.Bits() || !pool.Contains(p.Addr())) {
		errs = append(errs, field.Invalid(path.Child("prefix"), record.Prefix, fmt.Sprintf("must lie strictly inside from.prefix %s: write a longer sub-prefix of it", pool)))
	}
	return errs
}

func validateRecordName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name != "" {
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(fldPath, name, msg+"; write a short name such as pods-v4"))
		}
	}
	return errs
}

func validateClaimedPrefix(c *networking.ClaimedPrefix, fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if c.Claim == "" {
		errs = append(errs, field.Required(fldPath.Child("claim"), "name the NetworkClaim that holds the prefix"))
	}
	if _, err := validatePrefix(c.Prefix, fldPath.Child("prefix")); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validatePrefix parses a CIDR and insists on the one way to write it.
func validatePrefix(value string, fldPath *field.Path) (netip.Prefix, *field.Error) {
	if value == "" {
		return netip.Prefix{}, field.Required(fldPath, "write an IPv4 or IPv6 CIDR, e.g. 10.96.0.0/12 or fd00:10:96::/112")
	}
	if strings.Contains(value, "%") {
		return netip.Prefix{}, field.Invalid(fldPath, value, "must not have an IPv6 zone (%...): write the prefix alone, e.g. fe80::/64")
	}
	prefix, err := netip.ParsePrefix(value)
	if err != nil {
		return netip.Prefix{}, field.Invalid(fldPath, value, "must be an IPv4 or IPv6 CIDR, e.g. 10.96.0.0/12 or fd00:10:96::/112")
	}
	// Only a /96 or longer lies in the IPv4-mapped range ::ffff:0:0/96; a
	// shorter one written in its notation (::ffff:0.0.0.0/0) is an IPv6
	// prefix that is not in canonical form, and is told so below, rather
	// than offered an IPv4 prefix that covers none of its other addresses.
	if prefix.Addr().Is4In6() && prefix.Bits() >= 96 {
		suggestion := netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96).Masked()
		return netip.Prefix{}, field.Invalid(fldPath, value, fmt.Sprintf("must not be an IPv4-mapped IPv6 prefix: write the IPv4 prefix, e.g. %s", suggestion))
	}
	if canonical := prefix.Masked().String(); canonical != value {
		return netip.Prefix{}, field.Invalid(fldPath, value, fmt.Sprintf("must be a canonical prefix (no host bits set, shortest form): write %s", canonical))
	}
	return prefix, nil
}

// validateTime checks that t can be stored and read back. metav1.Time is
// written in UTC as RFC 3339, whose years have four digits, and reads
// nothing else: a time that its zone offset carries past the end of 9999
// (9999-12-31T23:59:59-23:00) or before year 0 would be stored, and every
// read of the claim after it would fail, lists and watches included.
func validateTime(t metav1.Time, fldPath *field.Path) field.ErrorList {
	if t.IsZero() {
		return nil
	}
	if year := t.UTC().Year(); year < 0 || year > 9999 {
		return field.ErrorList{field.Invalid(fldPath, t.Format(time.RFC3339), "must lie between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC: write the time in UTC, e.g. 2026-03-01T12:00:00Z")}
	}
	return nil
}

func validateReference(ref *networking.ResourceReference, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	if ref.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Group) {
			errs = append(errs, field.Invalid(fldPath.Child("group"), ref.Group, msg+"; write \"\" for the core group or a group such as networking.k8s.io"))
		}
	}
	if ref.Resource == "" {
		errs = append(errs, field.Required(fldPath.Child("resource"), "write the plural resource name, e.g. services"))
	} else {
		for _, msg := range validation.IsDNS1123Label(ref.Resource) {
			errs = append(errs, field.Invalid(fldPath.Child("resource"), ref.Resource, msg+"; write the plural resource name, e.g. services"))
		}
	}
	return errs
}

// validatePoolPolicy checks a delegable record's pool policy against the
// record: lengths that fit inside its prefix, reservations inside it.
func validatePoolPolicy(record networking.AddressSpaceRecord, path *field.Path) field.ErrorList {
	policy := record.Pool
	if policy == nil {
		return nil
	}
	poolPath := path.Child("pool")
	if !record.Delegable {
		return field.ErrorList{field.Invalid(poolPath, "", "only a delegable record hands out sub-prefixes: add delegable: true, or remove pool")}
	}
	// The record's own length, where it is known: its prefix's, or the
	// length a pool record asks for; 0 (and up to 128) otherwise.
	own, bitLen := 0, 128
	prefix, err := netip.ParsePrefix(record.Prefix)
	switch {
	case err == nil:
		own, bitLen = prefix.Bits(), prefix.Addr().BitLen()
	case record.PrefixLength != nil:
		own = int(*record.PrefixLength)
	}
	var errs field.ErrorList
	lengthOK := func(n *int32, name string) bool {
		if n == nil {
			return false
		}
		if int(*n) <= own || int(*n) > bitLen {
			errs = append(errs, field.Invalid(poolPath.Child(name), *n, fmt.Sprintf("must be the length of a sub-prefix of this record, longer than its own: write %d to %d", own+1, bitLen)))
			return false
		}
		return true
	}
	minOK, maxOK := lengthOK(policy.MinPrefixLength, "minPrefixLength"), lengthOK(policy.MaxPrefixLength, "maxPrefixLength")
	if minOK && maxOK && *policy.MinPrefixLength > *policy.MaxPrefixLength {
		errs = append(errs, field.Invalid(poolPath.Child("maxPrefixLength"), *policy.MaxPrefixLength,
			fmt.Sprintf("must not be shorter than minPrefixLength %d: minPrefixLength is the largest block handed out, maxPrefixLength the smallest; write %d or more", *policy.MinPrefixLength, *policy.MinPrefixLength)))
	}
	if n := policy.MaxRecordsPerClaim; n != nil && (*n < 1 || *n > MaxRecords) {
		errs = append(errs, field.Invalid(poolPath.Child("maxRecordsPerClaim"), *n, fmt.Sprintf("must be 1 to %d (a claim holds at most %d records): write 1 for one record per claim, or leave it unset for no limit", MaxRecords, MaxRecords)))
	}
	if n := policy.ReuseGracePeriodSeconds; n != nil && (*n < 0 || *n > MaxReuseGracePeriodSeconds) {
		errs = append(errs, field.Invalid(poolPath.Child("reuseGracePeriodSeconds"), *n, fmt.Sprintf("must be 0 to %d (30 days): write e.g. 3600 to rest a released sub-prefix for an hour, or 0 to reuse it at once", MaxReuseGracePeriodSeconds)))
	}
	reservationsPath := poolPath.Child("reservations")
	if n := len(policy.Reservations); n > MaxReservations {
		errs = append(errs, field.TooMany(reservationsPath, n, MaxReservations))
	}
	var reserved []netip.Prefix
	for i, r := range policy.Reservations {
		rPath := reservationsPath.Index(i)
		if len(r.Description) > MaxDescriptionLength {
			errs = append(errs, field.TooLong(rPath.Child("description"), "", MaxDescriptionLength))
		}
		p, perr := validatePrefix(r.Prefix, rPath.Child("prefix"))
		if perr != nil {
			errs = append(errs, perr)
			continue
		}
		if err != nil {
			errs = append(errs, field.Invalid(rPath.Child("prefix"), r.Prefix, "a record whose prefix the registry chooses cannot know its reservations in advance: reserve ranges on a record that names its prefix, or remove reservations"))
			continue
		}
		if p.Bits() <= prefix.Bits() || !prefix.Contains(p.Addr()) {
			errs = append(errs, field.Invalid(rPath.Child("prefix"), r.Prefix, fmt.Sprintf("must lie strictly inside the record's prefix %s: write a sub-prefix of it, e.g. %s", prefix, netip.PrefixFrom(prefix.Addr(), min(prefix.Bits()+8, prefix.Addr().BitLen())))))
			continue
		}
		for j, other := range reserved {
			if p.Overlaps(other) {
				errs = append(errs, field.Invalid(rPath.Child("prefix"), r.Prefix, fmt.Sprintf("overlaps reservations[%d] %s: reserve the larger range alone", j, other)))
			}
		}
		reserved = append(reserved, p)
	}
	return errs
}

// validatePoolStatus checks the utilization the registry writes.
func validatePoolStatus(pool *networking.PoolStatus, path *field.Path) field.ErrorList {
	if pool == nil {
		return nil
	}
	var errs field.ErrorList
	for _, c := range []struct{ name, value string }{
		{"addresses", pool.Addresses}, {"allocated", pool.Allocated}, {"reserved", pool.Reserved}, {"cooling", pool.Cooling}, {"free", pool.Free},
	} {
		if n, ok := new(big.Int).SetString(c.value, 10); !ok || n.Sign() < 0 || n.String() != c.value {
			errs = append(errs, field.Invalid(path.Child(c.name), c.value, "must be a number of addresses in decimal, e.g. 16777216"))
		}
	}
	if pool.UsedPercent < 0 || pool.UsedPercent > 100 {
		errs = append(errs, field.Invalid(path.Child("usedPercent"), pool.UsedPercent, "must be 0 to 100"))
	}
	if pool.LargestFreePrefix != "" {
		if _, err := validatePrefix(pool.LargestFreePrefix, path.Child("largestFreePrefix")); err != nil {
			errs = append(errs, err)
		}
	}
	if pool.SubPrefixes < 0 {
		errs = append(errs, field.Invalid(path.Child("subPrefixes"), pool.SubPrefixes, "must not be negative"))
	}
	if pool.Tenants < 0 {
		errs = append(errs, field.Invalid(path.Child("tenants"), pool.Tenants, "must not be negative"))
	}
	coolingPath := path.Child("coolingPrefixes")
	if n := len(pool.CoolingPrefixes); n > MaxCoolingPrefixes {
		errs = append(errs, field.TooMany(coolingPath, n, MaxCoolingPrefixes))
	}
	seen := sets.New[string]()
	for i, c := range pool.CoolingPrefixes {
		cPath := coolingPath.Index(i)
		if _, err := validatePrefix(c.Prefix, cPath.Child("prefix")); err != nil {
			errs = append(errs, err)
		} else if seen.Has(c.Prefix) {
			errs = append(errs, field.Duplicate(cPath.Child("prefix"), c.Prefix))
		}
		seen.Insert(c.Prefix)
		if c.Claim == "" {
			errs = append(errs, field.Required(cPath.Child("claim"), "name the NetworkClaim that released the prefix"))
		}
		errs = append(errs, validateTime(c.ReusableAt, cPath.Child("reusableAt"))...)
	}
	return errs
}
