package controlplane

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
)

const (
	networkingPolicyHook = "networking.x-k8s.io/bootstrap-policy"
	policyFieldManager   = "sample-generic-controlplane"
	// legacyWellKnownPolicyName is the ValidatingAdmissionPolicy that
	// guarded the well-known claims before the WellKnownNetworkClaims
	// admission plugin.
	legacyWellKnownPolicyName = "networkclaims-well-known-names"
)

// ensureNetworkingPolicy applies, at every start, the RBAC that comes with
// the NetworkClaim API. Server-side apply makes it idempotent and puts back
// what someone changed.
var ensureNetworkingPolicy = bootstrapHook("NetworkClaim RBAC and admission policy", applyNetworkingPolicy)

func applyNetworkingPolicy(ctx context.Context, client kubernetes.Interface) error {
	opts := metav1.ApplyOptions{FieldManager: policyFieldManager, Force: true}
	group := networking.GroupName
	roles := []*rbacv1ac.ClusterRoleApplyConfiguration{
		// Read joins view (and so edit and admin, which aggregate view).
		rbacv1ac.ClusterRole("system:aggregate-to-view:networkclaims").
			WithLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}).
			WithRules(rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims", "networkclaims/status").WithVerbs("get", "list", "watch")),
		// Write joins edit and admin.
		rbacv1ac.ClusterRole("system:aggregate-to-edit:networkclaims").
			WithLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true", "rbac.authorization.k8s.io/aggregate-to-admin": "true"}).
			WithRules(rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims").WithVerbs("create", "update", "patch", "delete", "deletecollection")),
	}
	// The allocation controller acts as its own service account, as
	// upstream's controllers do with their system:controller: roles.
	allocatorRole := "system:controller:" + allocation.Identity
	roles = append(roles, rbacv1ac.ClusterRole(allocatorRole).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims").WithVerbs("get", "list", "watch"),
			rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims/status").WithVerbs("update", "patch"),
			rbacv1ac.PolicyRule().WithAPIGroups("", "events.k8s.io").WithResources("events").WithVerbs("create", "update", "patch"),
		))
	for _, role := range roles {
		if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
			return fmt.Errorf("clusterrole %s: %w", *role.Name, err)
		}
	}
	binding := rbacv1ac.ClusterRoleBinding(allocatorRole).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(allocatorRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(metav1.NamespaceSystem).WithName(allocation.Identity))
	if _, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, binding, opts); err != nil {
		return fmt.Errorf("clusterrolebinding %s: %w", allocatorRole, err)
	}

	return removeWellKnownPolicy(ctx, client)
}

// removeWellKnownPolicy deletes the ValidatingAdmissionPolicy (and its
// binding) that guarded the well-known claims before the
// WellKnownNetworkClaims admission plugin did, if this control plane wrote
// them: data dirs of earlier versions still hold them.
func removeWellKnownPolicy(ctx context.Context, client kubernetes.Interface) error {
	admission := client.AdmissionregistrationV1()
	binding, err := admission.ValidatingAdmissionPolicyBindings().Get(ctx, legacyWellKnownPolicyName, metav1.GetOptions{})
	if err := deleteIfOurs(err, binding, func(opts metav1.DeleteOptions) error {
		return admission.ValidatingAdmissionPolicyBindings().Delete(ctx, legacyWellKnownPolicyName, opts)
	}); err != nil {
		return fmt.Errorf("validatingadmissionpolicybinding %s: %w", legacyWellKnownPolicyName, err)
	}
	policy, err := admission.ValidatingAdmissionPolicies().Get(ctx, legacyWellKnownPolicyName, metav1.GetOptions{})
	if err := deleteIfOurs(err, policy, func(opts metav1.DeleteOptions) error {
		return admission.ValidatingAdmissionPolicies().Delete(ctx, legacyWellKnownPolicyName, opts)
	}); err != nil {
		return fmt.Errorf("validatingadmissionpolicy %s: %w", legacyWellKnownPolicyName, err)
	}
	return nil
}

// deleteIfOurs deletes the object got (with getErr) if our field manager
// wrote it, and only that object: a precondition on its UID.
func deleteIfOurs(getErr error, obj metav1.Object, del func(metav1.DeleteOptions) error) error {
	if apierrors.IsNotFound(getErr) {
		return nil
	}
	if getErr != nil {
		return getErr
	}
	if !slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == policyFieldManager }) {
		return nil
	}
	uid := obj.GetUID()
	if err := del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
