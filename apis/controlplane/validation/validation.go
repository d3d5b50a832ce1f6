// Package validation checks the objects of controlplane.x-k8s.io. Every
// error names the field and says what to write instead.
package validation

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
)

// MaxServiceLocationPorts is the most ports one ServiceLocation maps.
const MaxServiceLocationPorts = 16

// ServiceLocationName is the name of the ServiceLocation of the service
// reference {namespace, name}: NAME.NAMESPACE.
func ServiceLocationName(namespace, name string) string {
	return name + "." + namespace
}

// ValidateServiceLocation validates a new ServiceLocation.
func ValidateServiceLocation(l *controlplane.ServiceLocation) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&l.ObjectMeta, false, validateServiceLocationName, field.NewPath("metadata"))
	return append(errs, validateServiceLocationSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateServiceLocationUpdate validates a change of a ServiceLocation.
func ValidateServiceLocationUpdate(l, old *controlplane.ServiceLocation) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&l.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateServiceLocationSpec(&l.Spec, field.NewPath("spec"))...)
}

// validateServiceLocationName checks that name is NAME.NAMESPACE, both DNS
// labels, as Service names and namespaces are.
func validateServiceLocationName(name string, prefix bool) []string {
	if prefix {
		return []string{"generateName is not supported: the name must be the service's name and namespace, NAME.NAMESPACE"}
	}
	service, namespace, ok := strings.Cut(name, ".")
	if !ok || strings.Contains(namespace, ".") {
		return []string{"must be the service's name and namespace, NAME.NAMESPACE, e.g. api.wardle for the reference {namespace: wardle, name: api}"}
	}
	var msgs []string
	for _, msg := range validation.IsDNS1123Label(service) {
		msgs = append(msgs, "the service name (before the dot) "+msg)
	}
	for _, msg := range validation.IsDNS1123Label(namespace) {
		msgs = append(msgs, "the namespace (after the dot) "+msg)
	}
	return msgs
}

func validateServiceLocationSpec(spec *controlplane.ServiceLocationSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAddress(spec.Address, fldPath.Child("address"))...)
	portsPath := fldPath.Child("ports")
	switch {
	case len(spec.Ports) == 0:
		errs = append(errs, field.Required(portsPath, "list the ports references name and where the server listens, e.g. [{port: 443, targetPort: 8443}]"))
	case len(spec.Ports) > MaxServiceLocationPorts:
		errs = append(errs, field.TooMany(portsPath, len(spec.Ports), MaxServiceLocationPorts))
	}
	seen := map[int32]bool{}
	for i, p := range spec.Ports {
		path := portsPath.Index(i)
		for _, msg := range validation.IsValidPortNum(int(p.Port)) {
			errs = append(errs, field.Invalid(path.Child("port"), p.Port, msg+": write the port the service references name, e.g. 443"))
		}
		for _, msg := range validation.IsValidPortNum(int(p.TargetPort)) {
			errs = append(errs, field.Invalid(path.Child("targetPort"), p.TargetPort, msg+": write the port the server listens on"))
		}
		if seen[p.Port] {
			errs = append(errs, field.Duplicate(path.Child("port"), p.Port))
		}
		seen[p.Port] = true
	}
	return errs
}

// validateAddress accepts an IP address or a DNS name, as a URL's host.
func validateAddress(address string, fldPath *field.Path) field.ErrorList {
	if address == "" {
		return field.ErrorList{field.Required(fldPath, "write the IP address or DNS name the server listens on, e.g. 127.0.0.1")}
	}
	if ip, err := netip.ParseAddr(address); err == nil {
		if ip.Zone() != "" {
			return field.ErrorList{field.Invalid(fldPath, address, "must not have an IPv6 zone: write the address alone")}
		}
		// ::ffff:0.0.0.0 is 0.0.0.0 too.
		if ip.Unmap().IsUnspecified() {
			return field.ErrorList{field.Invalid(fldPath, address, "is no address to connect to: write the server's, e.g. 127.0.0.1")}
		}
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(address); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(fldPath, address, fmt.Sprintf("must be an IP address or a DNS name (%s), e.g. 127.0.0.1 or webhooks.example.com", strings.Join(msgs, "; ")))}
	}
	labels := strings.Split(address, ".")
	if numeric.MatchString(labels[len(labels)-1]) {
		return field.ErrorList{field.Invalid(fldPath, address, "is neither an IP address nor a DNS name: a DNS name does not end in a number, and resolvers read names such as 0, 127.1 or 010.0.0.1 as IPv4 addresses in other notations (0 is 0.0.0.0); write the IP address in the usual notation, e.g. 127.0.0.1, or a DNS name, e.g. webhooks.example.com")}
	}
	return nil
}

// numeric matches a label that is a number, in decimal, octal or hex: the
// parts of an IPv4 address as inet_aton reads it (RFC 1123, section 2.1:
// a host name's last label is never numeric, so that it is never taken
// for one).
var numeric = regexp.MustCompile(`^([0-9]+|0x[0-9a-f]*)$`)
