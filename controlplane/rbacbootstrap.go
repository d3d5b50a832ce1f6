package controlplane

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

const (
	// rbacBootstrapWorkers reconcile bootstrap roles and bindings in parallel;
	// each object is independent of the others.
	rbacBootstrapWorkers = 8
)

// rbacStorage is upstream's RBAC storage with a faster bootstrap hook.
//
// Upstream's hook (rbacrest.PolicyData.EnsureRBACPolicy) retries with
// wait.Poll(1*time.Second, ...), which sleeps a whole second before its first
// attempt; as /readyz waits for the hook, every start of every control plane
// would pay that second. This hook reconciles the same policy (upstream's
// bootstrappolicy) with the same library (component-helpers' reconciliation),
// but tries at once and reconciles objects concurrently.
//
// Upstream also migrates roles and bindings written by Kubernetes 1.8 and
// older (ClusterRolesToAggregate, ClusterRoleBindingsToSplit); no data of
// this control plane predates those versions, so that step is left out.
type rbacStorage struct {
	rbacrest.RESTStorageProvider
}

// PostStartHook replaces upstream's rbac/bootstrap-roles hook under the same name.
func (rbacStorage) PostStartHook() (string, genericapiserver.PostStartHookFunc, error) {
	return rbacrest.PostStartHookName, bootstrapHook("bootstrap RBAC policy", reconcileBootstrapPolicy), nil
}

// reconcileBootstrapPolicy creates or updates every bootstrap role and
// binding; it returns the failures, having tried every object.
func reconcileBootstrapPolicy(ctx context.Context, client kubernetes.Interface) error {
	rbac, namespaces := client.RbacV1(), client.CoreV1().Namespaces()
	var tasks []func() error
	for _, role := range append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...) {
		tasks = append(tasks, func() error {
			_, err := (&reconciliation.ReconcileRoleOptions{
				Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &role},
				Client:  reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
				Confirm: true,
			}).Run()
			return wrapReconcileErr(err, "clusterrole", "", role.Name)
		})
	}
	for _, binding := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
		tasks = append(tasks, func() error {
			_, err := (&reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &binding},
				Client:      reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
				Confirm:     true,
			}).Run()
			return wrapReconcileErr(err, "clusterrolebinding", "", binding.Name)
		})
	}
	for namespace, roles := range bootstrappolicy.NamespaceRoles() {
		for _, role := range roles {
			tasks = append(tasks, func() error {
				_, err := (&reconciliation.ReconcileRoleOptions{
					Role:    reconciliation.RoleRuleOwner{Role: &role},
					Client:  reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces},
					Confirm: true,
				}).Run()
				return wrapReconcileErr(err, "role", namespace, role.Name)
			})
		}
	}
	for namespace, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, binding := range bindings {
			tasks = append(tasks, func() error {
				_, err := (&reconciliation.ReconcileRoleBindingOptions{
					RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &binding},
					Client:      reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces},
					Confirm:     true,
				}).Run()
				return wrapReconcileErr(err, "rolebinding", namespace, binding.Name)
			})
		}
	}
	return runConcurrently(ctx, rbacBootstrapWorkers, tasks)
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
