// Package testmain is a plain go test suite whose TestMain starts an
// envtest.Environment pointed at sample-generic-controlplane. Its test
// calls the reconciler itself, as kubebuilder's controller tests do, and
// leaves the rest to the control plane's garbage collector and namespace
// controller, which envtest's control plane does not run.
package testmain

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	widgets "example.com/launcher-consumer"
)

func TestReconciledWidgetIsCleanedUp(t *testing.T) {
	ctx := t.Context()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "widgets-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	widget := widgets.NewWidget(ns.Name, "teal")
	widget.Object["spec"] = map[string]any{"color": "teal"}
	if err := c.Create(ctx, widget); err != nil {
		t.Fatal(err)
	}
	r := &widgets.Reconciler{Client: c}
	if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(widget)}); err != nil {
		t.Fatal(err)
	}
	config := client.ObjectKey{Namespace: ns.Name, Name: "teal-config"}
	if err := c.Get(ctx, config, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the reconciler made no ConfigMap: %v", err)
	}

	if err := c.Delete(ctx, widget); err != nil {
		t.Fatal(err)
	}
	waitUntilGone(t, c, config, &corev1.ConfigMap{}, "the garbage collector deletes the Widget's ConfigMap")

	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	waitUntilGone(t, c, client.ObjectKeyFromObject(ns), &corev1.Namespace{}, "the namespace controller removes the deleted namespace")
}

// waitUntilGone polls until the object that key names no longer exists,
// and fails the test after a minute.
func waitUntilGone(t *testing.T, c client.Client, key client.ObjectKey, obj client.Object, what string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
