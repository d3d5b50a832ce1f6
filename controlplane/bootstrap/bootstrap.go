// Package bootstrap writes what a control plane needs at every start, after
// its APIs are installed and before it reports ready: upstream's bootstrap
// RBAC policy (RBACPolicyHook), the roles of the controllers that declare
// theirs (ControllerRoles), and what a program adds (Bootstrap, through
// controlplane.Options.AddBootstrap). Each runs as a post-start hook that
// /readyz waits for (Hook).
package bootstrap

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
)

const (
	// FieldManager is the field manager of what the control plane applies
	// at start: a bootstrap can tell the objects it wrote from others by it.
	FieldManager = "sample-generic-controlplane"
	// controllerRolesHook keeps the roles of the controllers that declare theirs.
	controllerRolesHook = "sample-generic-controlplane/controller-roles"
	// controllerRolePrefix names a controller's role, as upstream's
	// bootstrap policy names those of kube-controller-manager's controllers.
	controllerRolePrefix = "system:controller:"
)

// Bootstrap writes objects the control plane needs at every start, after
// the APIs are installed and before it reports ready: /readyz waits for it
// (as poststarthook/<Name>). A failed write is retried every 100 ms for up
// to 30 s; if it never succeeds, the server never becomes ready.
type Bootstrap struct {
	// Name names the post-start hook, e.g. "example.com/bootstrap-policy".
	Name string
	// ClusterRoles and ClusterRoleBindings are applied with server-side
	// apply, forced: what someone changed in the fields they set is put
	// back at the next start. One whose fields hold what it sets already
	// is only read (so a restart does not wait for admission to be ready).
	ClusterRoles        []*rbacv1ac.ClusterRoleApplyConfiguration
	ClusterRoleBindings []*rbacv1ac.ClusterRoleBindingApplyConfiguration
	// Apply, if set, writes anything else, after the roles and bindings;
	// it must be idempotent.
	Apply func(ctx context.Context, client kubernetes.Interface) error
	// RequiredResources must all be served for the bootstrap to run: e.g.
	// the roles of an API a feature gate turns off would grant nothing.
	RequiredResources []schema.GroupVersionResource
}

// Runs reports whether every resource the bootstrap needs is served.
func (b Bootstrap) Runs(resources serverstorage.APIResourceConfigSource) bool {
	for _, r := range b.RequiredResources {
		if !resources.ResourceEnabled(r) {
			return false
		}
	}
	return true
}

// Hook is the bootstrap as a post-start hook.
func (b Bootstrap) Hook() genericapiserver.PostStartHookFunc {
	return Hook(b.Name, b.write)
}

// write applies the roles and bindings, all at once, then calls Apply. Each
// is read first, and applied only if that would change it: a read is
// answered as soon as the server serves, while a write (an apply that
// changes nothing included) waits until admission is ready (upstream's
// plugins check every 100 ms). A restart then writes nothing.
func (b Bootstrap) write(ctx context.Context, client kubernetes.Interface) error {
	roles, bindings := client.RbacV1().ClusterRoles(), client.RbacV1().ClusterRoleBindings()
	var applies []func() error
	for _, role := range b.ClusterRoles {
		applies = append(applies, func() error {
			return wrapReconcileErr(applyIfChanged(ctx, role, *role.Name, roles.Get, roles.Apply), "clusterrole", "", *role.Name)
		})
	}
	for _, binding := range b.ClusterRoleBindings {
		applies = append(applies, func() error {
			return wrapReconcileErr(applyIfChanged(ctx, binding, *binding.Name, bindings.Get, bindings.Apply), "clusterrolebinding", "", *binding.Name)
		})
	}
	if err := runConcurrently(ctx, len(applies), applies); err != nil {
		return err
	}
	if b.Apply != nil {
		return b.Apply(ctx, client)
	}
	return nil
}

// applyIfChanged applies desired, server-side and forced, as FieldManager,
// unless the stored object holds it already (appliedAlready).
func applyIfChanged[Obj runtime.Object, AC any](ctx context.Context, desired AC, name string,
	get func(context.Context, string, metav1.GetOptions) (Obj, error),
	apply func(context.Context, AC, metav1.ApplyOptions) (Obj, error)) error {
	stored, err := get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && appliedAlready(stored, desired):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	_, err = apply(ctx, desired, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// ControllerRoles is the bootstrap of the roles that controllers declare
// (Descriptor.Rules): for each one that can run (its feature gates on), the
// ClusterRole system:controller:<service account> with its rules, bound to
// its service account in kube-system. Upstream's controllers have theirs in
// upstream's bootstrap policy.
func ControllerRoles(o *manager.Options) Bootstrap {
	b := Bootstrap{Name: controllerRolesHook}
	for _, d := range o.Descriptors() {
		if len(d.Rules) == 0 || manager.GatedOff(d) {
			continue
		}
		name := controllerRolePrefix + d.ServiceAccount
		role := rbacv1ac.ClusterRole(name)
		for _, r := range d.Rules {
			role.WithRules(rbacv1ac.PolicyRule().
				WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).WithVerbs(r.Verbs...).
				WithResourceNames(r.ResourceNames...).WithNonResourceURLs(r.NonResourceURLs...))
		}
		b.ClusterRoles = append(b.ClusterRoles, role)
		b.ClusterRoleBindings = append(b.ClusterRoleBindings, rbacv1ac.ClusterRoleBinding(name).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(name)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(metav1.NamespaceSystem).WithName(d.ServiceAccount)))
	}
	return b
}
