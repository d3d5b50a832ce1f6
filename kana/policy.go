package kana

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
	"sigs.k8s.io/sample-generic-controlplane/kana/admission/pooluse"
)

const (
	// policyHook names the bootstrap (/readyz/poststarthook/<name>).
	policyHook = "networking.x-k8s.io/bootstrap-policy"
	// legacyWellKnownPolicyName is the ValidatingAdmissionPolicy that
	// guarded the well-known claims before the WellKnownNetworkClaims
	// admission plugin.
	legacyWellKnownPolicyName = "networkclaims-well-known-names"
)

// policy is the RBAC that comes with the NetworkClaim API, applied at every
// start while the API is served: reading claims joins the view role (and so
// edit and admin, which aggregate it), writing them joins edit and admin.
// So does use, which takes address space from a claim's delegable records
// (the NetworkClaimPoolUse admission plugin): whoever could draw from pools
// before use was checked, by edit or admin, still can. The allocation
// controller writes only status and needs no use; its role comes with its
// descriptor.
func policy() bootstrap.Bootstrap {
	group := networking.GroupName
	return bootstrap.Bootstrap{
		Name: policyHook,
		ClusterRoles: []*rbacv1ac.ClusterRoleApplyConfiguration{
			rbacv1ac.ClusterRole("system:aggregate-to-view:networkclaims").
				WithLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}).
				WithRules(rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims", "networkclaims/status").WithVerbs("get", "list", "watch")),
			rbacv1ac.ClusterRole("system:aggregate-to-edit:networkclaims").
				WithLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true", "rbac.authorization.k8s.io/aggregate-to-admin": "true"}).
				WithRules(rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources("networkclaims").WithVerbs("create", "update", "patch", "delete", "deletecollection", pooluse.Verb)),
		},
		Apply:             removeWellKnownPolicy,
		RequiredResources: []schema.GroupVersionResource{networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims")},
	}
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
	if !slices.ContainsFunc(obj.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == bootstrap.FieldManager }) {
		return nil
	}
	uid := obj.GetUID()
	if err := del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
