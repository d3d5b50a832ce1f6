package controlplane

import (
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestAPIServerIDIsPerReplicaAndStable(t *testing.T) {
	id := hashAPIServerID("laptop", "127.0.0.1:6443")
	if id != hashAPIServerID("laptop", "127.0.0.1:6443") {
		t.Error("the same host and address gave two identities; a restarted replica must keep its own")
	}
	// Upstream's shape: a Lease name and a label value.
	if !regexp.MustCompile(`^apiserver-[a-z2-7]{26}$`).MatchString(id) || len(validation.IsDNS1123Subdomain(id)) > 0 || len(validation.IsValidLabelValue(id)) > 0 {
		t.Errorf("identity %q is not apiserver-<26 lower-case base32 characters>", id)
	}
	for _, other := range []struct{ hostname, address string }{
		{"laptop", "127.0.0.1:6444"},  // a second replica on the same host
		{"laptop", "127.0.0.2:6443"},  // same port, another address
		{"desktop", "127.0.0.1:6443"}, // another host
		{"laptop127.0.0.1", ":6443"},  // the parts are not simply joined
	} {
		if got := hashAPIServerID(other.hostname, other.address); got == id {
			t.Errorf("host %q address %q has the identity of host laptop address 127.0.0.1:6443", other.hostname, other.address)
		}
	}
}
