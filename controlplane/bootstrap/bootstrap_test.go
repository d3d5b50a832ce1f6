package bootstrap

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
)

// barrier lets n callers through once all n have arrived, or fails them
// when ctx ends first.
type barrier struct {
	ctx     context.Context
	arrived sync.WaitGroup
	all     chan struct{}
}

func newBarrier(ctx context.Context, n int) *barrier {
	b := &barrier{ctx: ctx, all: make(chan struct{})}
	b.arrived.Add(n)
	go func() {
		b.arrived.Wait()
		close(b.all)
	}()
	return b
}

func (b *barrier) wait() error {
	b.arrived.Done()
	select {
	case <-b.all:
		return nil
	case <-b.ctx.Done():
		return errors.New("the other applies were not in flight meanwhile")
	}
}

// applyBarrierClient holds every apply of a cluster role or binding at a barrier.
type applyBarrierClient struct {
	kubernetes.Interface
	barrier *barrier
}

func (c applyBarrierClient) RbacV1() rbacv1client.RbacV1Interface {
	return applyBarrierRBAC{RbacV1Interface: c.Interface.RbacV1(), barrier: c.barrier}
}

type applyBarrierRBAC struct {
	rbacv1client.RbacV1Interface
	barrier *barrier
}

func (r applyBarrierRBAC) ClusterRoles() rbacv1client.ClusterRoleInterface {
	return applyBarrierRoles{ClusterRoleInterface: r.RbacV1Interface.ClusterRoles(), barrier: r.barrier}
}

func (r applyBarrierRBAC) ClusterRoleBindings() rbacv1client.ClusterRoleBindingInterface {
	return applyBarrierBindings{ClusterRoleBindingInterface: r.RbacV1Interface.ClusterRoleBindings(), barrier: r.barrier}
}

type applyBarrierRoles struct {
	rbacv1client.ClusterRoleInterface
	barrier *barrier
}

func (r applyBarrierRoles) Apply(ctx context.Context, role *rbacv1ac.ClusterRoleApplyConfiguration, opts metav1.ApplyOptions) (*rbacv1.ClusterRole, error) {
	if err := r.barrier.wait(); err != nil {
		return nil, err
	}
	return r.ClusterRoleInterface.Apply(ctx, role, opts)
}

type applyBarrierBindings struct {
	rbacv1client.ClusterRoleBindingInterface
	barrier *barrier
}

func (r applyBarrierBindings) Apply(ctx context.Context, binding *rbacv1ac.ClusterRoleBindingApplyConfiguration, opts metav1.ApplyOptions) (*rbacv1.ClusterRoleBinding, error) {
	if err := r.barrier.wait(); err != nil {
		return nil, err
	}
	return r.ClusterRoleBindingInterface.Apply(ctx, binding, opts)
}

// A bootstrap's roles and bindings are applied together: at a start each
// apply waits until admission is ready, and in turn they would wait one
// after another. Apply runs once they are all stored.
func TestBootstrapAppliesTogether(t *testing.T) {
	binding := func(name string) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
		return rbacv1ac.ClusterRoleBinding(name).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(name)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.GroupKind).WithAPIGroup(rbacv1.GroupName).WithName("viewers"))
	}
	b := Bootstrap{
		Name:                "example.com/bootstrap",
		ClusterRoles:        []*rbacv1ac.ClusterRoleApplyConfiguration{rbacv1ac.ClusterRole("a"), rbacv1ac.ClusterRole("b")},
		ClusterRoleBindings: []*rbacv1ac.ClusterRoleBindingApplyConfiguration{binding("a")},
	}
	var stored int
	b.Apply = func(ctx context.Context, client kubernetes.Interface) error {
		roles, err := client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		bindings, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		stored = len(roles.Items) + len(bindings.Items)
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	client := applyBarrierClient{Interface: fake.NewClientset(), barrier: newBarrier(ctx, 3)}
	if err := b.write(ctx, client); err != nil {
		t.Fatal(err)
	}
	if stored != 3 {
		t.Errorf("Apply saw %d roles and bindings, want all 3", stored)
	}
}

// A bootstrap applies its roles and bindings when they are missing or
// someone changed what it set, and only reads them when they hold what it
// would apply: a restart writes nothing.
func TestBootstrapAppliesOnlyWhatChanged(t *testing.T) {
	rule := rbacv1ac.PolicyRule().WithAPIGroups("example.com").WithResources("widgets").WithVerbs("get", "list")
	b := Bootstrap{
		Name: "example.com/bootstrap",
		ClusterRoles: []*rbacv1ac.ClusterRoleApplyConfiguration{
			rbacv1ac.ClusterRole("widget-viewer").WithLabels(map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}).WithRules(rule),
		},
		ClusterRoleBindings: []*rbacv1ac.ClusterRoleBindingApplyConfiguration{
			rbacv1ac.ClusterRoleBinding("widget-viewer").
				WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("widget-viewer")).
				WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace("kube-system").WithName("widgets")),
		},
	}
	client := fake.NewClientset()
	write := func(what string) map[string]int {
		t.Helper()
		client.ClearActions()
		if err := b.write(t.Context(), client); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return rbacVerbs(client.Actions())
	}

	if verbs := write("first start"); verbs["patch"] != 2 {
		t.Errorf("first start: %v, want both applied", verbs)
	}
	if verbs := write("restart"); verbs["patch"] != 0 || verbs["get"] != 2 {
		t.Errorf("restart: %v, want two reads and no apply", verbs)
	}

	roles := client.RbacV1().ClusterRoles()
	role, err := roles.Get(t.Context(), "widget-viewer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
	if _, err := roles.Update(t.Context(), role, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	if verbs := write("restart after someone changed the role"); verbs["patch"] != 1 {
		t.Errorf("restart after someone changed the role: %v, want it applied again", verbs)
	}
	if role, err = roles.Get(t.Context(), "widget-viewer", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"get", "list"}; !slices.Equal(role.Rules[0].Verbs, want) {
		t.Errorf("verbs %v after the bootstrap, want %v", role.Rules[0].Verbs, want)
	}

	// A later version that sets a label no more removes it, as the apply does.
	b.ClusterRoles[0] = rbacv1ac.ClusterRole("widget-viewer").WithRules(rule)
	if verbs := write("restart after an upgrade"); verbs["patch"] != 1 {
		t.Errorf("restart after an upgrade: %v, want the role applied again", verbs)
	}
	if role, err = roles.Get(t.Context(), "widget-viewer", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(role.Labels) != 0 {
		t.Errorf("labels %v after the upgrade, want none", role.Labels)
	}
	if verbs := write("restart"); verbs["patch"] != 0 {
		t.Errorf("restart: %v, want no apply", verbs)
	}
}
