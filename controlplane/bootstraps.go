package controlplane

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// runs reports whether every resource the bootstrap needs is served.
func (b Bootstrap) runs(resources serverstorage.APIResourceConfigSource) bool {
	for _, r := range b.RequiredResources {
		if !resources.ResourceEnabled(r) {
			return false
		}
	}
	return true
}

// hook is the bootstrap as a post-start hook.
func (b Bootstrap) hook() genericapiserver.PostStartHookFunc {
	return bootstrapHook(b.Name, b.write)
}

// write applies the roles and bindings, all at once: each apply first waits
// until admission is ready, then they are independent of one another. Then
// it calls Apply.
func (b Bootstrap) write(ctx context.Context, client kubernetes.Interface) error {
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	var applies []func() error
	for _, role := range b.ClusterRoles {
		applies = append(applies, func() error {
			if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
				return fmt.Errorf("clusterrole %s: %w", *role.Name, err)
			}
			return nil
		})
	}
	for _, binding := range b.ClusterRoleBindings {
		applies = append(applies, func() error {
			if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts); err != nil {
				return fmt.Errorf("clusterrolebinding %s: %w", *binding.Name, err)
			}
			return nil
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

// controllerRoles is the bootstrap of the roles that controllers declare
// (Descriptor.Rules): for each one that can run (its feature gates on), the
// ClusterRole system:controller:<service account> with its rules, bound to
// its service account in kube-system. Upstream's controllers have theirs in
// upstream's bootstrap policy.
func controllerRoles(o *manager.Options) Bootstrap {
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
