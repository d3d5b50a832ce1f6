package wellknownclaims

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

func claim(name string) runtime.Object {
	return &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestValidate(t *testing.T) {
	claims := networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims")
	kind := networkingv1alpha1.SchemeGroupVersion.WithKind("NetworkClaim")
	editor := &user.DefaultInfo{Name: "editor", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	tests := []struct {
		desc        string
		resource    schema.GroupVersionResource
		subresource string
		op          admission.Operation
		name        string // the request's
		obj, old    runtime.Object
		user        user.Info
		forbidden   bool
	}{
		{desc: "editor creates kube-apiserver", resource: claims, op: admission.Create, name: "kube-apiserver", obj: claim("kube-apiserver"), user: editor, forbidden: true},
		{desc: "editor creates kube-controller-manager", resource: claims, op: admission.Create, name: "kube-controller-manager", obj: claim("kube-controller-manager"), user: editor, forbidden: true},
		{desc: "editor updates kube-apiserver", resource: claims, op: admission.Update, name: "kube-apiserver", obj: claim("kube-apiserver"), old: claim("kube-apiserver"), user: editor, forbidden: true},
		{desc: "editor deletes kube-apiserver", resource: claims, op: admission.Delete, name: "kube-apiserver", old: claim("kube-apiserver"), user: editor, forbidden: true},
		{desc: "one item of an editor's deletecollection", resource: claims, op: admission.Delete, old: claim("kube-apiserver"), user: editor, forbidden: true},
		{desc: "editor creates with generateName", resource: claims, op: admission.Create, obj: claim("kube-apiserver"), user: editor, forbidden: true},
		{desc: "no user", resource: claims, op: admission.Create, name: "kube-apiserver", obj: claim("kube-apiserver"), forbidden: true},
		{desc: "admin creates kube-apiserver", resource: claims, op: admission.Create, name: "kube-apiserver", obj: claim("kube-apiserver"), user: admin},
		{desc: "admin deletes kube-apiserver", resource: claims, op: admission.Delete, name: "kube-apiserver", old: claim("kube-apiserver"), user: admin},
		{desc: "the registry writes status", resource: claims, subresource: "status", op: admission.Update, name: "kube-apiserver", obj: claim("kube-apiserver"), old: claim("kube-apiserver"), user: editor},
		{desc: "editor creates another claim", resource: claims, op: admission.Create, name: "my-cni", obj: claim("my-cni"), user: editor},
		{desc: "a configmap named kube-apiserver", resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, op: admission.Create, name: "kube-apiserver", user: editor},
	}
	plugin := New()
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			a := admission.NewAttributesRecord(tc.obj, tc.old, kind, "", tc.name, tc.resource, tc.subresource, tc.op, nil, false, tc.user)
			if !plugin.Handles(tc.op) {
				t.Fatalf("the plugin does not handle %s", tc.op)
			}
			err := plugin.Validate(t.Context(), a, nil)
			if tc.forbidden != apierrors.IsForbidden(err) || (!tc.forbidden && err != nil) {
				t.Fatalf("Validate = %v, want forbidden: %v", err, tc.forbidden)
			}
		})
	}
}
