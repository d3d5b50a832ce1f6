package controlplane

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

const (
	// joinTokenRoleName names the ClusterRole of join tokens and its binding.
	joinTokenRoleName = "system:sample-generic-controlplane:join-token"
	// joinTokenRBACHook names the bootstrap (/readyz/poststarthook/<name>).
	joinTokenRBACHook = "sample-generic-controlplane/join-token-rbac"
)

// joinTokenRBAC is the bootstrap that lets join tokens (jointoken.Group) POST to jointoken.JoinPath and
// do nothing else: the ClusterRole joinTokenRoleName, bound to jointoken.Group. A token is
// then no credential to the API, only to joining.
func joinTokenRBAC() bootstrap.Bootstrap {
	return bootstrap.Bootstrap{
		Name: joinTokenRBACHook,
		ClusterRoles: []*rbacv1ac.ClusterRoleApplyConfiguration{
			rbacv1ac.ClusterRole(joinTokenRoleName).
				WithRules(rbacv1ac.PolicyRule().WithNonResourceURLs(jointoken.JoinPath).WithVerbs("post")),
		},
		ClusterRoleBindings: []*rbacv1ac.ClusterRoleBindingApplyConfiguration{
			rbacv1ac.ClusterRoleBinding(joinTokenRoleName).
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(joinTokenRoleName)).
				WithSubjects(rbacv1ac.Subject().WithAPIGroup(rbacv1.GroupName).WithKind(rbacv1.GroupKind).WithName(jointoken.Group)),
		},
		RequiredResources: []schema.GroupVersionResource{
			rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
			rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
		},
	}
}
