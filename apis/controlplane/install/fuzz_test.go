package install

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/validation"
	"sigs.k8s.io/sample-generic-controlplane/apis/internal/decodefuzz"
)

// FuzzDecodeServiceLocation: any request body, in JSON, YAML or protobuf,
// decodes to a ServiceLocation or an error, and validates on create and
// update without a panic, every error naming its field; a location that
// validates comes back equal from storage's encodings (protobuf and JSON).
// The corpus is in testdata/fuzz/FuzzDecodeServiceLocation, and the seeds
// below are added in protobuf too.
func FuzzDecodeServiceLocation(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"controlplane.x-k8s.io/v1alpha1","kind":"ServiceLocation","metadata":{"name":"api.wardle"},"spec":{"address":"127.0.0.1","ports":[{"port":443,"targetPort":8443}]}}`,
		`{"metadata":{"name":"webhook.cert-manager"},"spec":{"address":"webhooks.example.com","ports":[{"port":443,"targetPort":10250},{"port":80,"targetPort":8080}]}}`,
		"apiVersion: controlplane.x-k8s.io/v1alpha1\nkind: ServiceLocation\nmetadata:\n  name: api.wardle\nspec:\n  address: \"::1\"\n  ports:\n  - port: 443\n    targetPort: 9443\n",
		`{"metadata":{"name":"api"},"spec":{"address":"fe80::1%eth0","ports":[{"port":0,"targetPort":70000},{"port":0}]}}`,
	}
	checker := decodefuzz.New(decodefuzz.Kind{
		Install: Install,
		GVK:     v1alpha1.SchemeGroupVersion.WithKind("ServiceLocation"),
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateServiceLocation(obj.(*controlplane.ServiceLocation))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateServiceLocationUpdate(obj.(*controlplane.ServiceLocation), old.(*controlplane.ServiceLocation))
		},
		Upstream: []string{"metadata"},
		Old: &controlplane.ServiceLocation{
			ObjectMeta: metav1.ObjectMeta{Name: "api.wardle", UID: "a8d3c1e0-0000-4000-8000-000000000002", ResourceVersion: "7"},
			Spec:       controlplane.ServiceLocationSpec{Address: "127.0.0.1", Ports: []controlplane.ServiceLocationPort{{Port: 443, TargetPort: 8443}}},
		},
	})
	checker.AddSeeds(f, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		checker.Check(t, data)
	})
}
