// Package widgets is an operator's controller, tested as operators test
// theirs: a controller-runtime suite against a control plane, here one that
// sigs.k8s.io/sample-generic-controlplane/testenv starts, which collects
// garbage and deletes namespaces as a cluster does.
package widgets

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// WidgetKind is the custom resource of config/crd.
var WidgetKind = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// NewWidget returns an empty Widget, for Get or for a new one.
func NewWidget(namespace, name string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(WidgetKind)
	w.SetNamespace(namespace)
	w.SetName(name)
	return w
}

// Reconciler gives every Widget a ConfigMap <name>-config, holding its
// spec.color, that the Widget controls: the garbage collector deletes it
// with the Widget.
type Reconciler struct {
	client.Client
}

// SetupWithManager runs the reconciler in mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(NewWidget("", "")).
		Owns(&corev1.ConfigMap{}).
		Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	widget := NewWidget(req.Namespace, req.Name)
	if err := r.Get(ctx, req.NamespacedName, widget); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if widget.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	color, _, err := unstructured.NestedString(widget.Object, "spec", "color")
	if err != nil {
		return ctrl.Result{}, err
	}
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: widget.GetNamespace(), Name: widget.GetName() + "-config"}}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, config, func() error {
		config.Data = map[string]string{"color": color}
		return controllerutil.SetControllerReference(widget, config, r.Scheme())
	})
	return ctrl.Result{}, err
}
