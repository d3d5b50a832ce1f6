package validation

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
)

// FuzzValidateServiceLocation builds ServiceLocations from fuzzed fields:
// the name, the address and two ports. Validation must not panic; each
// error names a field and says what to write; and what it accepts is a
// location the resolver can use: a service's name and namespace, an
// address to connect to that reads as what the user wrote, and ports in
// range, each once. The corpus is in
// testdata/fuzz/FuzzValidateServiceLocation.
func FuzzValidateServiceLocation(f *testing.F) {
	for _, s := range []struct {
		name, address             string
		port, targetPort, another int32
	}{
		{"api.wardle", "127.0.0.1", 443, 8443, 0},
		{"webhook.cert-manager", "webhooks.example.com", 443, 10250, 80},
		{"api.wardle", "::1", 443, 9443, 443},
		{"api", "fe80::1%eth0", 0, 70000, -1},
		{"api.wardle.svc", "0.0.0.0", 65535, 65536, 1},
		{"API.-wardle", "https://127.0.0.1:8443", 1, 1, 2},
	} {
		f.Add(s.name, s.address, s.port, s.targetPort, s.another)
	}
	f.Fuzz(func(t *testing.T, name, address string, port, targetPort, another int32) {
		ports := []controlplane.ServiceLocationPort{{Port: port, TargetPort: targetPort}}
		if another != 0 {
			ports = append(ports, controlplane.ServiceLocationPort{Port: another, TargetPort: targetPort})
		}
		l := location(name, address, ports...)
		errs := ValidateServiceLocation(l)
		for _, err := range errs {
			if !strings.HasPrefix(err.Field, "spec.") && err.Field != "metadata.name" {
				t.Errorf("an error names no field of the location: %v", err)
			}
			if (err.Type == field.ErrorTypeInvalid || err.Type == field.ErrorTypeRequired) && err.Detail == "" {
				t.Errorf("an error does not say what to write instead: %v", err)
			}
		}
		if len(errs) == 0 {
			checkUsable(t, l)
		}
	})
}

// checkUsable checks what the resolver relies on in a valid location.
func checkUsable(t *testing.T, l *controlplane.ServiceLocation) {
	t.Helper()
	if service, namespace, ok := strings.Cut(l.Name, "."); !ok || service == "" || namespace == "" || strings.Contains(namespace, ".") {
		t.Errorf("accepted the name %q, which is not NAME.NAMESPACE", l.Name)
	}
	address := l.Spec.Address
	if ip, err := netip.ParseAddr(address); err == nil {
		if ip.Unmap().IsUnspecified() || ip.Zone() != "" {
			t.Errorf("accepted the address %q, which is none to connect to", address)
		}
	} else {
		// RFC 1123, section 2.1: a host name's last label is never
		// numeric, so that it cannot be taken for an IPv4 address, as
		// resolvers that read 127.1 or 010.0.0.1 as one would.
		labels := strings.Split(address, ".")
		if last := labels[len(labels)-1]; last != "" && strings.Trim(last, "0123456789") == "" {
			t.Errorf("accepted the address %q as a DNS name, which resolvers may read as an IPv4 address", address)
		}
	}
	seen := map[int32]bool{}
	for _, p := range l.Spec.Ports {
		if p.Port < 1 || p.Port > 65535 || p.TargetPort < 1 || p.TargetPort > 65535 || seen[p.Port] {
			t.Errorf("accepted the ports %v", l.Spec.Ports)
		}
		seen[p.Port] = true
		// As the resolver writes the URL it connects to.
		u, err := url.Parse("https://" + net.JoinHostPort(address, strconv.Itoa(int(p.TargetPort))))
		if err != nil || u.Hostname() != address || u.Port() != strconv.Itoa(int(p.TargetPort)) {
			t.Errorf("accepted the address %q, which the resolver's URL does not carry: %v, %v", address, u, err)
		}
	}
}
