// Package validation checks NetworkClaims. Every error names the field and
// says what to write instead.
package validation

import (
	"fmt"
	"net/netip"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

const (
	// MaxRecords is the most prefixes one claim may hold.
	MaxRecords = 64
	// MaxDescriptionLength bounds a record's description.
	MaxDescriptionLength = 255
)

// ValidateNetworkClaim validates a new claim.
func ValidateNetworkClaim(claim *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&claim.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, ValidateNetworkClaimSpec(&claim.Spec, field.NewPath("spec"))...)
}

// ValidateNetworkClaimUpdate validates a change of a claim's metadata and spec.
func ValidateNetworkClaimUpdate(claim, old *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateNetworkClaimSpec(&claim.Spec, field.NewPath("spec"))...)
}

// ValidateNetworkClaimStatusUpdate validates what the registry writes to status.
func ValidateNetworkClaimStatusUpdate(claim, old *networking.NetworkClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	status := &claim.Status
	if status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("observedGeneration"), status.ObservedGeneration, "must not be negative"))
	}
	seen := map[string]bool{}
	for i, record := range status.AddressSpace {
		path := fldPath.Child("addressSpace").Index(i)
		if _, err := validatePrefix(record.Prefix, path.Child("prefix")); err != nil {
			errs = append(errs, err)
		} else if seen[record.Prefix] {
			errs = append(errs, field.Duplicate(path.Child("prefix"), record.Prefix))
		}
		seen[record.Prefix] = true
		switch record.Status {
		case networking.AllocationAllocated, networking.AllocationUnavailable:
		default:
			errs = append(errs, field.NotSupported(path.Child("status"), record.Status, []string{string(networking.AllocationAllocated), string(networking.AllocationUnavailable)}))
		}
		if record.Status == networking.AllocationUnavailable && record.Message == "" {
			errs = append(errs, field.Required(path.Child("message"), "say why the prefix is unavailable, naming the claim that holds it"))
		}
		errs = append(errs, validateReference(record.Reference, path.Child("reference"))...)
	}
	return append(errs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
}

// ValidateNetworkClaimSpec validates the claimed records.
func ValidateNetworkClaimSpec(spec *networking.NetworkClaimSpec, fldPath *field.Path) field.ErrorList {
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
	for i, record := range spec.AddressSpace {
		path := listPath.Index(i)
		prefix, err := validatePrefix(record.Prefix, path.Child("prefix"))
		if err != nil {
			errs = append(errs, err)
		} else {
			for _, other := range valid {
				if prefix == other.prefix {
					errs = append(errs, field.Duplicate(path.Child("prefix"), record.Prefix))
				} else if prefix.Overlaps(other.prefix) {
					errs = append(errs, field.Invalid(path.Child("prefix"), record.Prefix,
						fmt.Sprintf("overlaps %s (addressSpace[%d]); the records of one claim must not overlap: claim the larger prefix alone, or split it", other.prefix, other.index)))
				}
			}
			valid = append(valid, parsed{i, prefix})
		}
		if len(record.Description) > MaxDescriptionLength {
			errs = append(errs, field.TooLong(path.Child("description"), "", MaxDescriptionLength))
		}
		errs = append(errs, validateReference(record.Reference, path.Child("reference"))...)
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
	if prefix.Addr().Is4In6() {
		suggestion := netip.PrefixFrom(prefix.Addr().Unmap(), max(prefix.Bits()-96, 0)).Masked()
		return netip.Prefix{}, field.Invalid(fldPath, value, fmt.Sprintf("must not be an IPv4-mapped IPv6 prefix: write the IPv4 prefix, e.g. %s", suggestion))
	}
	if canonical := prefix.Masked().String(); canonical != value {
		return netip.Prefix{}, field.Invalid(fldPath, value, fmt.Sprintf("must be a canonical prefix (no host bits set, shortest form): write %s", canonical))
	}
	return prefix, nil
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
