package jointoken

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
)

const (
	// roleName names the ClusterRole of join tokens and its binding.
	roleName = "system:sample-generic-controlplane:join-token"
	// rbacHook names the bootstrap (/readyz/poststarthook/<name>).
	rbacHook = "sample-generic-controlplane/join-token-rbac"
)

// RBAC is the bootstrap that lets join tokens (Group) POST to JoinPath and
// do nothing else: the ClusterRole roleName, bound to Group. A token is
// then no credential to the API, only to joining.
func RBAC() bootstrap.Bootstrap {
	return bootstrap.Bootstrap{
		Name: rbacHook,
		ClusterRoles: []*rbacv1ac.ClusterRoleApplyConfiguration{
			rbacv1ac.ClusterRole(roleName).
				WithRules(rbacv1ac.PolicyRule().WithNonResourceURLs(JoinPath).WithVerbs("post")),
		},
		ClusterRoleBindings: []*rbacv1ac.ClusterRoleBindingApplyConfiguration{
			rbacv1ac.ClusterRoleBinding(roleName).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(roleName)).
				WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.GroupKind).WithName(Group)),
		},
		RequiredResources: []schema.GroupVersionResource{
			rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
			rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
		},
	}
}
