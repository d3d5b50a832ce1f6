package controlplane

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	openapicommon "k8s.io/kube-openapi/pkg/common"
)

// --runtime-config may name an added group, to turn it off (or on):
// upstream validates the flag against the groups the scheme knows, which
// the added groups must have joined by then.
func TestValidateRuntimeConfigOfAddedGroups(t *testing.T) {
	// A group of this test alone: the scheme is the process's, and another
	// test may have installed the built-in ones already.
	added := schema.GroupVersion{Group: "runtime-config.example.com", Version: "v1"}
	tests := []struct {
		name          string
		runtimeConfig map[string]string
		wantErr       string
	}{
		{name: "an added group off", runtimeConfig: map[string]string{added.String(): "false"}},
		{name: "the built-in ServiceLocations off", runtimeConfig: map[string]string{"controlplane.x-k8s.io/v1alpha1": "false"}},
		{name: "a group nobody serves", runtimeConfig: map[string]string{"nowhere.example.com/v1": "false"}, wantErr: "unknown api groups nowhere.example.com/v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir = t.TempDir()
			if err := o.AddAPIGroup(APIGroup{
				Name:     added.Group,
				Versions: []APIGroupVersion{{Version: added.Version}},
				AddToScheme: func(s *runtime.Scheme) error {
					metav1.AddToGroupVersion(s, added)
					return nil
				},
				OpenAPIDefinitions: func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition { return nil },
				NewStorage: func(*runtime.Scheme, generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error) {
					return nil, nil
				},
			}); err != nil {
				t.Fatal(err)
			}
			o.ControlPlane.APIEnablement.RuntimeConfig = tc.runtimeConfig
			d, err := o.PrepareDataDir(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Close)
			c, err := o.Complete(t.Context(), d)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, err := range c.Validate() {
				got = append(got, err.Error())
			}
			if msg := strings.Join(got, "; "); (tc.wantErr == "") != (msg == "") || !strings.Contains(msg, tc.wantErr) {
				t.Errorf("Validate: %q, want %q", msg, tc.wantErr)
			}
		})
	}
}
