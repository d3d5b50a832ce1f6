package install

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/sample-generic-controlplane/apis/internal/decodefuzz"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
)

// FuzzDecodeNetworkClaim: any request body, in JSON, YAML or protobuf,
// decodes to a NetworkClaim or an error, and validates on create, update
// and status update without a panic, every error naming its field; a claim
// that validates comes back equal from storage's encodings (protobuf and
// JSON). The corpus is in testdata/fuzz/FuzzDecodeNetworkClaim, and the
// seeds below are added in protobuf too.
func FuzzDecodeNetworkClaim(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"networking.x-k8s.io/v1alpha1","kind":"NetworkClaim","metadata":{"name":"kube-apiserver"},"spec":{"addressSpace":[{"prefix":"10.96.0.0/12","reference":{"group":"","resource":"services"},"description":"Service ClusterIP range"},{"prefix":"fd00:10:96::/112"}]}}`,
		`{"metadata":{"name":"org-pods"},"spec":{"addressSpace":[{"prefix":"10.0.0.0/8","delegable":true}]}}`,
		`{"metadata":{"name":"node-a"},"spec":{"addressSpace":[{"name":"pods-v4","prefixLength":24,"from":{"claim":"org-pods","prefix":"10.0.0.0/8"}},{"prefix":"10.5.0.0/16","from":{"claim":"org-pods"}}]}}`,
		"apiVersion: networking.x-k8s.io/v1alpha1\nkind: NetworkClaim\nmetadata:\n  name: rir\nspec:\n  addressSpace:\n  - name: block\n    prefixLength: 12\n    from: {claim: iana}\n    delegable: true\n",
		`{"metadata":{"name":"x","resourceVersion":"7"},"spec":{"addressSpace":[{"prefix":"10.0.0.0/8"}]},"status":{"observedGeneration":1,"addressSpace":[{"prefix":"10.0.0.0/8","date":"2026-03-01T12:00:00Z","status":"Allocated","firstSeenResourceVersion":"7"}],"conditions":[{"type":"Ready","status":"True","reason":"Allocated","message":"","lastTransitionTime":"2026-03-01T12:00:00Z"}]}}`,
		`{"metadata":{"name":"y"},"spec":{"addressSpace":[{"prefix":"10.0.0.1/8"}]},"status":{"addressSpace":[{"name":"p","status":"Unavailable","reason":"Conflict","message":"overlaps","conflictsWith":{"claim":"x","prefix":"10.0.0.0/8"}}]}}`,
	}
	checker := decodefuzz.New(decodefuzz.Kind{
		Install: Install,
		GVK:     v1alpha1.SchemeGroupVersion.WithKind("NetworkClaim"),
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateNetworkClaim(obj.(*networking.NetworkClaim))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateNetworkClaimUpdate(obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim))
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateNetworkClaimStatusUpdate(obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim))
		},
		Upstream: []string{"metadata", "status.conditions"},
		Old: &networking.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", UID: "a8d3c1e0-0000-4000-8000-000000000001", ResourceVersion: "7", Generation: 1},
			Spec:       networking.NetworkClaimSpec{AddressSpace: []networking.AddressSpaceRecord{{Prefix: "10.96.0.0/12"}}},
		},
	})
	checker.AddSeeds(f, seeds...)
	f.Fuzz(func(t *testing.T, data []byte) {
		checker.Check(t, data)
	})
}
