package controlplane

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// joinTokenRBAC grants join tokens a POST to jointoken.JoinPath, and nothing else.
func TestJoinTokenRBAC(t *testing.T) {
	b := joinTokenRBAC()
	if b.Name == "" {
		t.Error("the bootstrap has no name")
	}
	if len(b.ClusterRoles) != 1 || len(b.ClusterRoleBindings) != 1 || b.Apply != nil {
		t.Fatalf("RBAC writes %d roles, %d bindings and Apply %v; want one role, one binding and nothing else", len(b.ClusterRoles), len(b.ClusterRoleBindings), b.Apply != nil)
	}
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	for _, c := range []struct{ from, to any }{{b.ClusterRoles[0], &role}, {b.ClusterRoleBindings[0], &binding}} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.from)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, c.to); err != nil {
			t.Fatal(err)
		}
	}
	const name = "system:sample-generic-controlplane:join-token"
	if role.Name != name || binding.Name != name {
		t.Errorf("role %q, binding %q; want both %q", role.Name, binding.Name, name)
	}
	if len(role.Rules) != 1 {
		t.Fatalf("role rules %+v, want one", role.Rules)
	}
	r := role.Rules[0]
	if !sets.New(r.NonResourceURLs...).Equal(sets.New(jointoken.JoinPath)) || !sets.New(r.Verbs...).Equal(sets.New("post")) ||
		len(r.APIGroups)+len(r.Resources)+len(r.ResourceNames) != 0 {
		t.Errorf("role rule %+v, want POST to %s only", r, jointoken.JoinPath)
	}
	want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	if binding.RoleRef != want {
		t.Errorf("binding roleRef %+v, want %+v", binding.RoleRef, want)
	}
	wantSubject := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: jointoken.Group}
	if len(binding.Subjects) != 1 || binding.Subjects[0] != wantSubject {
		t.Errorf("binding subjects %+v, want %+v", binding.Subjects, wantSubject)
	}
}
