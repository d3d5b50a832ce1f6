package example_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

// TestMain sets controller-runtime's logger once for all tests: it keeps the
// first one it is given, so a test's own (testr) would outlive its test.
func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New())
	os.Exit(m.Run())
}

// ownerLabel marks the ConfigMaps that get a child.
const ownerLabel = "example.com/owner"

// childReconciler gives every ConfigMap labelled example.com/owner=true a
// ConfigMap <name>-child that it controls.
type childReconciler struct {
	client.Client
}

func (r *childReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var owner corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &owner); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if owner.Labels[ownerLabel] != "true" || owner.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: owner.Namespace, Name: owner.Name + "-child"}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, child, func() error {
		child.Data = map[string]string{"owner": owner.Name}
		// controller=true, blockOwnerDeletion=true: the garbage collector
		// deletes the child with its owner.
		return controllerutil.SetControllerReference(&owner, child, r.Scheme())
	})
	return ctrl.Result{}, err
}

func TestChildrenAreCollected(t *testing.T) {
	// A complete control plane in this process, garbage collector and
	// namespace controller included; stopped when the test ends.
	s := cptesting.StartTestServer(t, cptesting.Options{})

	mgr, err := ctrl.NewManager(s.ClientConfig, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, // no metrics listener in a test
	})
	if err != nil {
		t.Fatal(err)
	}
	isOwner := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[ownerLabel] == "true" })
	err = ctrl.NewControllerManagedBy(mgr).
		For(&corev1.ConfigMap{}, builder.WithPredicates(isOwner)).
		Owns(&corev1.ConfigMap{}).
		Complete(&childReconciler{Client: mgr.GetClient()})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)

	// The test reads the API server, not the manager's cache.
	c, err := client.New(s.ClientConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	createOwner := func(name string) *corev1.ConfigMap {
		t.Helper()
		owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{ownerLabel: "true"}}}
		if err := c.Create(t.Context(), owner); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the reconciler creates "+name+"-child", func(ctx context.Context) (bool, error) {
			var child corev1.ConfigMap
			err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name + "-child"}, &child)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && metav1.IsControlledBy(&child, owner), err
		})
		return owner
	}

	// Deleting the owner in the background: the garbage collector deletes the child.
	owner := createOwner("first")
	if err := c.Delete(t.Context(), owner, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the garbage collector deletes first-child", gone(c, &corev1.ConfigMap{}, client.ObjectKey{Namespace: ns.Name, Name: "first-child"}))

	// Deleting the namespace: the namespace controller empties and removes it.
	createOwner("second")
	if err := c.Delete(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace controller removes the namespace", gone(c, &corev1.Namespace{}, client.ObjectKey{Name: ns.Name}))
}

// startManager runs mgr until the test ends, and stops it before the
// server: cleanups run last registered, first run.
func startManager(t *testing.T, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// eventually polls condition until it returns true, and fails the test when
// it returns an error or a minute passes.
func eventually(t *testing.T, what string, condition wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, condition); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// gone is a condition: the object key names no longer exists.
func gone(c client.Client, obj client.Object, key client.ObjectKey) wait.ConditionWithContextFunc {
	return func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}
