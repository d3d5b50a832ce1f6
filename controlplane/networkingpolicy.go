package controlplane

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
)

const (
	networkingPolicyHook = "networking.x-k8s.io/bootstrap-policy"
	policyFieldManager   = "sample-generic-controlplane"
	wellKnownPolicyName  = "networkclaims-well-known-names"
)

// wellKnownClaims are the claims only cluster admins may create, change or
// delete: RBAC cannot restrict creation by name, so admission does.
var wellKnownClaims = []string{"kube-apiserver", "kube-controller-manager"}

// ensureNetworkingPolicy applies, at every start, the RBAC and admission
// policy that come with the NetworkClaim API. Server-side apply makes it
// idempotent and puts back what someone changed.
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

	quoted := make([]string, len(wellKnownClaims))
	for i, name := range wellKnownClaims {
		quoted[i] = strconv.Quote(name)
	}
	names := "[" + strings.Join(quoted, ", ") + "]"
	policy := admissionv1ac.ValidatingAdmissionPolicy(wellKnownPolicyName).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionregistrationv1.Fail).
			// The main resource only: the registry writes status of every
			// claim, well-known or not.
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				admissionv1ac.NamedRuleWithOperations().
					WithAPIGroups(group).WithAPIVersions("*").WithResources("networkclaims").
					WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete))).
			WithMatchConditions(admissionv1ac.MatchCondition().WithName("well-known-claim").
				WithExpression("request.name in " + names)).
			WithValidations(admissionv1ac.Validation().
				WithExpression("'system:masters' in request.userInfo.groups").
				WithReason(metav1.StatusReasonForbidden).
				WithMessage("the well-known NetworkClaims " + strings.Join(wellKnownClaims, ", ") + " may be created, changed or deleted only by cluster admins (group system:masters); claim your address space under another name")))
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, policy, opts); err != nil {
		return fmt.Errorf("validatingadmissionpolicy %s: %w", wellKnownPolicyName, err)
	}
	policyBinding := admissionv1ac.ValidatingAdmissionPolicyBinding(wellKnownPolicyName).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(wellKnownPolicyName).
			WithValidationActions(admissionregistrationv1.Deny))
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, policyBinding, opts); err != nil {
		return fmt.Errorf("validatingadmissionpolicybinding %s: %w", wellKnownPolicyName, err)
	}
	return nil
}
