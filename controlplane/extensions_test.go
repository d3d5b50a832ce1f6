package controlplane

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
)

func newPlugin(io.Reader) (admission.Interface, error) { return nil, nil }

// An added admission plugin is known to the flags and runs where it was
// put: by default with upstream's built-in plugins, before policies and
// webhooks see the request.
func TestAddAdmissionPlugin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		plugin     AdmissionPlugin
		wantBefore string
		wantOff    bool
		wantErr    string
	}{
		{name: "default place", plugin: AdmissionPlugin{Name: "Guard", New: newPlugin}, wantBefore: validatingadmissionpolicy.PluginName},
		{name: "before a named plugin, off by default", plugin: AdmissionPlugin{Name: "Guard", New: newPlugin, Before: "ResourceQuota", DefaultOff: true}, wantBefore: "ResourceQuota", wantOff: true},
		{name: "unknown place", plugin: AdmissionPlugin{Name: "Guard", New: newPlugin, Before: "NoSuchPlugin"}, wantErr: `Before names "NoSuchPlugin"`},
		{name: "taken name", plugin: AdmissionPlugin{Name: "ResourceQuota", New: newPlugin}, wantErr: "registered already"},
		{name: "no factory", plugin: AdmissionPlugin{Name: "Guard"}, wantErr: "needs a Name and New"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			upstreamOrder := slices.Clone(o.ControlPlane.Admission.GenericAdmission.RecommendedPluginOrder)
			err := o.AddAdmissionPlugin(tc.plugin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a := o.ControlPlane.Admission.GenericAdmission
			order := a.RecommendedPluginOrder
			if at := slices.Index(order, tc.plugin.Name); at < 0 || order[at+1] != tc.wantBefore {
				t.Errorf("order %v, want %s right before %s", order, tc.plugin.Name, tc.wantBefore)
			}
			if got := slices.Contains(enabledAdmissionPlugins(a), tc.plugin.Name); got == tc.wantOff {
				t.Errorf("enabled = %v, want %v", got, !tc.wantOff)
			}
			if !slices.Equal(NewOptions().ControlPlane.Admission.GenericAdmission.RecommendedPluginOrder, upstreamOrder) {
				t.Error("adding a plugin changed upstream's order for every other control plane")
			}
		})
	}
}

func TestAddAPIGroupAndBootstrap(t *testing.T) {
	group := APIGroup{
		Name:               "example.com",
		Versions:           []APIGroupVersion{{Version: "v1"}},
		AddToScheme:        func(*runtime.Scheme) error { return nil },
		OpenAPIDefinitions: func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition { return nil },
		NewStorage: func(*runtime.Scheme, generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error) {
			return nil, nil
		},
	}
	o := NewOptions()
	if err := o.AddAPIGroup(group); err != nil {
		t.Fatal(err)
	}
	if err := o.AddAPIGroup(group); err == nil || !strings.Contains(err.Error(), "added already") {
		t.Errorf("the same group twice: %v", err)
	}
	noVersions := group
	noVersions.Name, noVersions.Versions = "other.example.com", nil
	if err := o.AddAPIGroup(noVersions); err == nil || !strings.Contains(err.Error(), "Versions is empty") {
		t.Errorf("a group without versions: %v", err)
	}
	// The group joins the scheme as it is added, and a failure says which.
	broken := group
	broken.Name = "broken.example.com"
	broken.AddToScheme = func(*runtime.Scheme) error { return errors.New("no types") }
	if err := o.AddAPIGroup(broken); err == nil || !strings.Contains(err.Error(), "adding API group broken.example.com to the scheme: no types") {
		t.Errorf("a group whose types cannot join the scheme: %v", err)
	}
	if err := o.AddBootstrap(bootstrap.Bootstrap{}); err == nil || !strings.Contains(err.Error(), "needs a Name") {
		t.Errorf("a bootstrap without a name: %v", err)
	}
}
