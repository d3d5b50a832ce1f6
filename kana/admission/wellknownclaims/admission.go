// Package wellknownclaims is the admission plugin WellKnownNetworkClaims: it
// keeps the NetworkClaims that name the cluster's own address space
// (kube-apiserver, kube-controller-manager) for cluster admins. RBAC cannot
// restrict creation by name, so admission does, compiled in as upstream's
// built-in plugins are: it holds from the first request the server admits
// and cannot be edited away through the API.
package wellknownclaims

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

// PluginName is the name --enable-admission-plugins and
// --disable-admission-plugins know it by.
const PluginName = "WellKnownNetworkClaims"

// names are the well-known claims.
var names = []string{"kube-apiserver", "kube-controller-manager"}

var networkClaims = networking.Resource("networkclaims")

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return New(), nil
	})
}

// Plugin refuses creating, changing or deleting a well-known claim to
// anyone outside system:masters. Status is not guarded: the registry
// writes the status of every claim.
type Plugin struct {
	*admission.Handler
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
}

// Validate refuses the request if it writes a well-known claim and the
// user is not a cluster admin.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != networkClaims || a.GetSubresource() != "" {
		return nil
	}
	name := claimName(a)
	if !slices.Contains(names, name) {
		return nil
	}
	if u := a.GetUserInfo(); u != nil && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return nil
	}
	return admission.NewForbidden(a, fmt.Errorf("the well-known NetworkClaims %s may be created, changed or deleted only by cluster admins (group %s); claim your address space under another name",
		strings.Join(names, ", "), user.SystemPrivilegedGroup))
}

// claimName is the name of the claim written: the object's, which is set
// even when the request names none (generateName, one item of a
// deletecollection), else the request's.
func claimName(a admission.Attributes) string {
	for _, obj := range []runtime.Object{a.GetObject(), a.GetOldObject()} {
		if obj == nil {
			continue
		}
		if accessor, err := meta.Accessor(obj); err == nil && accessor.GetName() != "" {
			return accessor.GetName()
		}
	}
	return a.GetName()
}
