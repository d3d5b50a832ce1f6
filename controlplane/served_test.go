package controlplane

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

// A program that serves fewer resources gets the admission plugins that
// would watch the missing ones off by default, and a clear error, not a
// server that hangs "not yet ready to handle request", when something
// still needs them.
func TestServedResourcesAndAdmission(t *testing.T) {
	minimal := func() *serverstorage.ResourceConfig {
		r := serverstorage.NewResourceConfig()
		r.EnableResources(serverNeeds...)
		r.EnableVersions(rbacv1.SchemeGroupVersion)
		return r
	}
	for _, tc := range []struct {
		name      string
		resources func() *serverstorage.ResourceConfig
		flags     func(o *Options)
		wantErr   []string
	}{
		{name: "the binary's resources", resources: DefaultResources},
		{name: "fewer resources: their plugins are off", resources: minimal},
		{
			name: "a plugin enabled by flag without its resources", resources: minimal,
			flags:   func(o *Options) { o.ControlPlane.Admission.GenericAdmission.EnablePlugins = []string{"ResourceQuota"} },
			wantErr: []string{"admission plugin ResourceQuota needs resourcequotas.v1", "--disable-admission-plugins=ResourceQuota"},
		},
		{
			name: "what the server itself needs", resources: func() *serverstorage.ResourceConfig {
				r := DefaultResources()
				r.DisableResources(corev1.SchemeGroupVersion.WithResource("secrets"))
				return r
			},
			wantErr: []string{"the API server itself needs secrets.v1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			if tc.flags != nil {
				tc.flags(o)
			}
			resources := tc.resources()
			admission := withoutAdmissionOfUnserved(o.ControlPlane.Admission, resources)
			err := checkServed(resources, admission.GenericAdmission)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want one containing %q", err, want)
				}
			}
			if o.ControlPlane.Admission.GenericAdmission.DefaultOffPlugins.Has("ResourceQuota") {
				t.Error("the caller's options were changed")
			}
		})
	}
}
