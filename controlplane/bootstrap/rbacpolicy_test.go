package bootstrap

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// rbacVerbs are the verbs of the actions on RBAC objects, by verb.
func rbacVerbs(actions []clienttesting.Action) map[string]int {
	verbs := map[string]int{}
	for _, a := range actions {
		if a.GetResource().Group == rbacv1.GroupName {
			verbs[a.GetVerb()]++
		}
	}
	return verbs
}

func bootstrapPolicySize() int {
	n := len(bootstrappolicy.ClusterRoles()) + len(bootstrappolicy.ControllerRoles()) +
		len(bootstrappolicy.ClusterRoleBindings()) + len(bootstrappolicy.ControllerRoleBindings())
	for _, roles := range bootstrappolicy.NamespaceRoles() {
		n += len(roles)
	}
	for _, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		n += len(bindings)
	}
	return n
}

// The bootstrap reads what exists with lists, not a GET per object: on a
// fresh store it only creates, and at a restart, nothing having changed,
// it only lists.
func TestReconcileBootstrapPolicyReadsByList(t *testing.T) {
	client := fake.NewClientset()
	if err := reconcileBootstrapPolicy(t.Context(), client); err != nil {
		t.Fatal(err)
	}
	fresh := rbacVerbs(client.Actions())
	if fresh["create"] != bootstrapPolicySize() || fresh["get"] != 0 || fresh["update"] != 0 {
		t.Errorf("fresh store: %v, want %d creates and no gets or updates", fresh, bootstrapPolicySize())
	}

	client.ClearActions()
	if err := reconcileBootstrapPolicy(t.Context(), client); err != nil {
		t.Fatal(err)
	}
	restart := rbacVerbs(client.Actions())
	lists := 2 + len(bootstrappolicy.NamespaceRoles()) + len(bootstrappolicy.NamespaceRoleBindings())
	if restart["list"] != lists || len(restart) != 1 {
		t.Errorf("restart: %v, want %d lists and nothing else", restart, lists)
	}
}

// What the lists show changed is reconciled; an update that conflicts
// (the list was stale) is retried on the object read again from the API.
func TestReconcileBootstrapPolicyRepairsWithStaleList(t *testing.T) {
	client := fake.NewClientset()
	if err := reconcileBootstrapPolicy(t.Context(), client); err != nil {
		t.Fatal(err)
	}
	const name = "system:discovery"
	rbac := client.RbacV1()
	role, err := rbac.ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := role.Rules
	if len(want) == 0 {
		t.Fatalf("cluster role %s has no rules to take away", name)
	}
	role.Rules = nil
	if _, err := rbac.ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	conflicts := 0
	client.PrependReactor("update", "clusterroles", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.UpdateAction).GetObject().(*rbacv1.ClusterRole).Name != name || conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		return true, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), name, nil)
	})

	client.ClearActions()
	if err := reconcileBootstrapPolicy(t.Context(), client); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Fatalf("%d conflicts, want the one the reactor returns", conflicts)
	}
	var gets []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "clusterroles" {
			gets = append(gets, a.(clienttesting.GetAction).GetName())
		}
	}
	if !slices.Equal(gets, []string{name}) {
		t.Errorf("cluster roles read one by one: %v, want only %s, after its conflict", gets, name)
	}
	repaired, err := rbac.ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if covers, missing := validation.Covers(repaired.Rules, want); !covers {
		t.Errorf("cluster role %s lacks %v after the bootstrap", name, missing)
	}
}
