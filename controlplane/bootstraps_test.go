package controlplane

import (
	"context"
	"errors"
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
