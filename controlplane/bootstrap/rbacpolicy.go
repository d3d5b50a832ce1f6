package bootstrap

import (
	"context"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

const (
	// rbacBootstrapWorkers reconcile bootstrap roles and bindings in parallel;
	// each object is independent of the others.
	rbacBootstrapWorkers = 8
)

// RBACPolicyHook is the post-start hook that reconciles upstream's
// bootstrap policy (bootstrappolicy's roles and bindings), in place of
// upstream's rbac/bootstrap-roles hook.
//
// Upstream's hook (rbacrest.PolicyData.EnsureRBACPolicy) retries with
// wait.Poll(1*time.Second, ...), which sleeps a whole second before its first
// attempt; as /readyz waits for the hook, every start of every control plane
// would pay that second. This one reconciles the same policy with the same
// library (component-helpers' reconciliation), but tries at once, reads what
// exists with a few lists instead of a GET per object, and reconciles
// objects concurrently.
//
// Upstream also migrates roles and bindings written by Kubernetes 1.8 and
// older (ClusterRolesToAggregate, ClusterRoleBindingsToSplit); no data of
// this control plane predates those versions, so that step is left out.
func RBACPolicyHook() genericapiserver.PostStartHookFunc {
	return Hook("bootstrap RBAC policy", reconcileBootstrapPolicy)
}

// reconcileBootstrapPolicy creates or updates every bootstrap role and
// binding; it returns the failures, having tried every object.
//
// What exists is read with one list per kind (and namespace) rather than
// one GET per object: at a restart, when nothing has changed, that is the
// whole of the work. Each object's first read comes from the lists, any
// later one (a retry after a conflict, or the library's own re-read after a
// create or update found the object changed meanwhile) from the API, so a
// list gone stale costs a retry, never a wrong write: updates carry the
// resourceVersion they were computed from.
func reconcileBootstrapPolicy(ctx context.Context, client kubernetes.Interface) error {
	rbac, namespaces := client.RbacV1(), client.CoreV1().Namespaces()
	existing, err := listBootstrapPolicy(ctx, rbac)
	if err != nil {
		return err
	}
	var tasks []func() error
	for _, role := range append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...) {
		owners := &listedFirstRuleOwners{
			RuleOwnerModifier: reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
			listedFirst:       listedFirst[reconciliation.RuleOwner]{resource: rbacv1.Resource("clusterroles")},
		}
		if listed, ok := existing.clusterRoles[role.Name]; ok {
			owners.listed = reconciliation.ClusterRoleRuleOwner{ClusterRole: listed}
		}
		tasks = append(tasks, func() error {
			_, err := (&reconciliation.ReconcileRoleOptions{
				Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &role},
				Client:  owners,
				Confirm: true,
			}).Run()
			return wrapReconcileErr(err, "clusterrole", "", role.Name)
		})
	}
	for _, binding := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
		bindings := &listedFirstRoleBindings{
			RoleBindingModifier: reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
			listedFirst:         listedFirst[reconciliation.RoleBinding]{resource: rbacv1.Resource("clusterrolebindings")},
		}
		if listed, ok := existing.clusterRoleBindings[binding.Name]; ok {
			bindings.listed = reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: listed}
		}
		tasks = append(tasks, func() error {
			_, err := (&reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &binding},
				Client:      bindings,
				Confirm:     true,
			}).Run()
			return wrapReconcileErr(err, "clusterrolebinding", "", binding.Name)
		})
	}
	for namespace, roles := range bootstrappolicy.NamespaceRoles() {
		for _, role := range roles {
			owners := &listedFirstRuleOwners{
				RuleOwnerModifier: reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces},
				listedFirst:       listedFirst[reconciliation.RuleOwner]{resource: rbacv1.Resource("roles")},
			}
			if listed, ok := existing.roles[namespace+"/"+role.Name]; ok {
				owners.listed = reconciliation.RoleRuleOwner{Role: listed}
			}
			tasks = append(tasks, func() error {
				_, err := (&reconciliation.ReconcileRoleOptions{
					Role:    reconciliation.RoleRuleOwner{Role: &role},
					Client:  owners,
					Confirm: true,
				}).Run()
				return wrapReconcileErr(err, "role", namespace, role.Name)
			})
		}
	}
	for namespace, roleBindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, binding := range roleBindings {
			bindings := &listedFirstRoleBindings{
				RoleBindingModifier: reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces},
				listedFirst:         listedFirst[reconciliation.RoleBinding]{resource: rbacv1.Resource("rolebindings")},
			}
			if listed, ok := existing.roleBindings[namespace+"/"+binding.Name]; ok {
				bindings.listed = reconciliation.RoleBindingAdapter{RoleBinding: listed}
			}
			tasks = append(tasks, func() error {
				_, err := (&reconciliation.ReconcileRoleBindingOptions{
					RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &binding},
					Client:      bindings,
					Confirm:     true,
				}).Run()
				return wrapReconcileErr(err, "rolebinding", namespace, binding.Name)
			})
		}
	}
	return runConcurrently(ctx, rbacBootstrapWorkers, tasks)
}

// existingPolicy is what the lists found: cluster-wide objects by name,
// namespaced ones by namespace/name.
type existingPolicy struct {
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	roles               map[string]*rbacv1.Role
	roleBindings        map[string]*rbacv1.RoleBinding
}

// listBootstrapPolicy lists the cluster roles and bindings, and the roles
// and bindings of the namespaces the bootstrap policy has some in.
func listBootstrapPolicy(ctx context.Context, rbac rbacv1client.RbacV1Interface) (*existingPolicy, error) {
	p := &existingPolicy{
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
		roles:               map[string]*rbacv1.Role{},
		roleBindings:        map[string]*rbacv1.RoleBinding{},
	}
	clusterRoles, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing clusterroles: %w", err)
	}
	for i := range clusterRoles.Items {
		p.clusterRoles[clusterRoles.Items[i].Name] = &clusterRoles.Items[i]
	}
	clusterRoleBindings, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing clusterrolebindings: %w", err)
	}
	for i := range clusterRoleBindings.Items {
		p.clusterRoleBindings[clusterRoleBindings.Items[i].Name] = &clusterRoleBindings.Items[i]
	}
	for namespace := range bootstrappolicy.NamespaceRoles() {
		roles, err := rbac.Roles(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing roles in %s: %w", namespace, err)
		}
		for i := range roles.Items {
			p.roles[namespace+"/"+roles.Items[i].Name] = &roles.Items[i]
		}
	}
	for namespace := range bootstrappolicy.NamespaceRoleBindings() {
		roleBindings, err := rbac.RoleBindings(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing rolebindings in %s: %w", namespace, err)
		}
		for i := range roleBindings.Items {
			p.roleBindings[namespace+"/"+roleBindings.Items[i].Name] = &roleBindings.Items[i]
		}
	}
	return p, nil
}

// listedFirst answers the first Get of one object with what the list found
// (the zero value: not found) and leaves later ones to the API.
type listedFirst[T any] struct {
	resource schema.GroupResource
	listed   T
	read     bool
}

func (l *listedFirst[T]) get(name string, ask func() (T, error)) (T, error) {
	if l.read {
		return ask()
	}
	l.read = true
	if any(l.listed) == nil {
		var none T
		return none, apierrors.NewNotFound(l.resource, name)
	}
	return l.listed, nil
}

// listedFirstRuleOwners is upstream's modifier of one role or cluster role
// whose first Get answers what the list found.
type listedFirstRuleOwners struct {
	reconciliation.RuleOwnerModifier
	listedFirst[reconciliation.RuleOwner]
}

func (m *listedFirstRuleOwners) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	return m.get(name, func() (reconciliation.RuleOwner, error) { return m.RuleOwnerModifier.Get(namespace, name) })
}

// listedFirstRoleBindings is the same for one binding or cluster binding.
type listedFirstRoleBindings struct {
	reconciliation.RoleBindingModifier
	listedFirst[reconciliation.RoleBinding]
}

func (m *listedFirstRoleBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	return m.get(name, func() (reconciliation.RoleBinding, error) { return m.RoleBindingModifier.Get(namespace, name) })
}

func wrapReconcileErr(err error, kind, namespace, name string) error {
	if err == nil {
		return nil
	}
	if namespace != "" {
		return fmt.Errorf("%s %s/%s: %w", kind, namespace, name, err)
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}

// runConcurrently runs every task on at most workers goroutines, retrying a
// task on conflicts and while the server is briefly unavailable, as upstream
// does, and returns all failures.
func runConcurrently(ctx context.Context, workers int, tasks []func() error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	queue := make(chan func() error)
	for range workers {
		wg.Go(func() {
			for task := range queue {
				err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
					return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
				}, task)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, task := range tasks {
		select {
		case queue <- task:
		case <-ctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return utilerrors.NewAggregate(errs)
}
