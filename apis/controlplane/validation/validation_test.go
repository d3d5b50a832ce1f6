package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
)

func location(name, address string, ports ...controlplane.ServiceLocationPort) *controlplane.ServiceLocation {
	return &controlplane.ServiceLocation{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       controlplane.ServiceLocationSpec{Address: address, Ports: ports},
	}
}

func TestValidateServiceLocation(t *testing.T) {
	https := controlplane.ServiceLocationPort{Port: 443, TargetPort: 8443}
	manyPorts := make([]controlplane.ServiceLocationPort, MaxServiceLocationPorts+1)
	for i := range manyPorts {
		manyPorts[i] = controlplane.ServiceLocationPort{Port: int32(i + 1), TargetPort: 8443}
	}
	tests := []struct {
		name     string
		location *controlplane.ServiceLocation
		// want are the fields in error, each with a word of its message.
		want map[string]string
	}{
		{name: "loopback IPv4", location: location("api.wardle", "127.0.0.1", https)},
		{name: "IPv6", location: location("api.wardle", "::1", https)},
		{name: "DNS name", location: location("webhook.cert-manager", "webhooks.example.com", https, controlplane.ServiceLocationPort{Port: 80, TargetPort: 8080})},
		{name: "no namespace", location: location("api", "127.0.0.1", https), want: map[string]string{"metadata.name": "NAME.NAMESPACE"}},
		{name: "namespace with a dot", location: location("api.wardle.svc", "127.0.0.1", https), want: map[string]string{"metadata.name": "NAME.NAMESPACE"}},
		{name: "service name not a label", location: location("API.wardle", "127.0.0.1", https), want: map[string]string{"metadata.name": "service name"}},
		{name: "namespace not a label", location: location("api.-wardle", "127.0.0.1", https), want: map[string]string{"metadata.name": "namespace"}},
		{name: "no address", location: location("api.wardle", "", https), want: map[string]string{"spec.address": "127.0.0.1"}},
		{name: "unspecified address", location: location("api.wardle", "0.0.0.0", https), want: map[string]string{"spec.address": "no address to connect to"}},
		{name: "unspecified IPv4-mapped address", location: location("api.wardle", "::ffff:0.0.0.0", https), want: map[string]string{"spec.address": "no address to connect to"}},
		{name: "IPv4-mapped address", location: location("api.wardle", "::ffff:127.0.0.1", https)},
		{name: "zone", location: location("api.wardle", "fe80::1%eth0", https), want: map[string]string{"spec.address": "zone"}},
		// Resolvers read these as IPv4 addresses (inet_aton): 0 is
		// 0.0.0.0, 127.1 is 127.0.0.1, 010.0.0.1 is 8.0.0.1.
		{name: "zero for an address", location: location("api.wardle", "0", https), want: map[string]string{"spec.address": "does not end in a number"}},
		{name: "short IPv4 notation", location: location("api.wardle", "127.1", https), want: map[string]string{"spec.address": "write the IP address in the usual notation"}},
		{name: "IPv4 with leading zeros", location: location("api.wardle", "010.0.0.1", https), want: map[string]string{"spec.address": "does not end in a number"}},
		{name: "hex IPv4", location: location("api.wardle", "0x7f000001", https), want: map[string]string{"spec.address": "does not end in a number"}},
		{name: "name ending in a number", location: location("api.wardle", "webhooks.example.123", https), want: map[string]string{"spec.address": "does not end in a number"}},
		{name: "name with numeric labels", location: location("api.wardle", "10.webhooks.example.com", https)},
		{name: "URL for an address", location: location("api.wardle", "https://127.0.0.1:8443", https), want: map[string]string{"spec.address": "IP address or a DNS name"}},
		{name: "no ports", location: location("api.wardle", "127.0.0.1"), want: map[string]string{"spec.ports": "targetPort"}},
		{name: "too many ports", location: location("api.wardle", "127.0.0.1", manyPorts...), want: map[string]string{"spec.ports": "must have at most"}},
		{name: "port zero", location: location("api.wardle", "127.0.0.1", controlplane.ServiceLocationPort{TargetPort: 8443}), want: map[string]string{"spec.ports[0].port": "e.g. 443"}},
		{name: "target port out of range", location: location("api.wardle", "127.0.0.1", controlplane.ServiceLocationPort{Port: 443, TargetPort: 70000}), want: map[string]string{"spec.ports[0].targetPort": "listens on"}},
		{name: "port twice", location: location("api.wardle", "127.0.0.1", https, controlplane.ServiceLocationPort{Port: 443, TargetPort: 9443}), want: map[string]string{"spec.ports[1].port": "Duplicate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, err := range ValidateServiceLocation(tc.location) {
				got[err.Field] = err.Error()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %v, want errors in %v", got, tc.want)
			}
			for f, word := range tc.want {
				if !strings.Contains(got[f], word) {
					t.Errorf("error on %s is %q; want one saying %q", f, got[f], word)
				}
			}
		})
	}
}

func TestServiceLocationNameIsValid(t *testing.T) {
	name := ServiceLocationName("wardle", "api")
	if errs := ValidateServiceLocation(location(name, "127.0.0.1", controlplane.ServiceLocationPort{Port: 443, TargetPort: 443})); len(errs) > 0 {
		t.Fatalf("ServiceLocationName(wardle, api) = %q, which does not validate: %v", name, errs)
	}
}

func TestValidateServiceLocationUpdate(t *testing.T) {
	old := location("api.wardle", "127.0.0.1", controlplane.ServiceLocationPort{Port: 443, TargetPort: 8443})
	old.ResourceVersion = "1"
	moved := old.DeepCopy()
	moved.Spec.Ports[0].TargetPort = 9443
	if errs := ValidateServiceLocationUpdate(moved, old); len(errs) > 0 {
		t.Errorf("moving the target port: %v", errs)
	}
	broken := old.DeepCopy()
	broken.Spec.Address = ""
	if errs := ValidateServiceLocationUpdate(broken, old); len(errs) != 1 || errs[0].Field != "spec.address" {
		t.Errorf("clearing the address: %v, want one error on spec.address", errs)
	}
}
