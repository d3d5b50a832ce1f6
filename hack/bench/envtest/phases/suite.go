package phases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// widgetGVK is the kind the suite's reconciler manages, from
// testdata/crds/widget.yaml.
var widgetGVK = schema.GroupVersionKind{Group: "bench.example.com", Version: "v1", Kind: "Widget"}

func init() {
	// The manager logs through controller-runtime's logger; the table is
	// the output.
	ctrl.SetLogger(logr.Discard())
}

// widgetReconciler gives every Widget a ConfigMap <name>-widget that it
// controls, holding the Widget's color: the smallest controller a suite
// tests.
type widgetReconciler struct {
	client.Client
}

func newWidget(namespace, name string) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetNamespace(namespace)
	w.SetName(name)
	return w
}

func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := newWidget(req.Namespace, req.Name)
	if err := r.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if w.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	color, _, err := unstructured.NestedString(w.Object, "spec", "color")
	if err != nil {
		return ctrl.Result{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.GetNamespace(), Name: w.GetName() + "-widget"}}
	_, err = controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"color": color}
		return controllerutil.SetControllerReference(w, cm, r.Scheme())
	})
	return ctrl.Result{}, err
}

// runSuite starts a controller-runtime manager with the Widget reconciler
// and runs tests small tests one after the other, as a suite does, each in
// a namespace of its own deleted at its end; then stops the manager. It
// returns how long the tests waited for their namespaces to go.
func runSuite(ctx context.Context, cfg *rest.Config, tests int, namespacesGo bool) (namespaceWait time.Duration, err error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return 0, fmt.Errorf("manager: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		For(newWidget("", "")).
		Owns(&corev1.ConfigMap{}).
		Complete(&widgetReconciler{Client: mgr.GetClient()})
	if err != nil {
		return 0, fmt.Errorf("controller: %w", err)
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(mgrCtx) }()
	defer func() {
		cancel()
		err = errors.Join(err, <-stopped)
	}()

	// The tests read the API server, not the manager's cache.
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return 0, err
	}
	for i := range tests {
		waited, err := reconcilerTest(ctx, c, fmt.Sprintf("bench-test-%d", i), namespacesGo)
		if err != nil {
			return 0, fmt.Errorf("test %d: %w", i, err)
		}
		namespaceWait += waited
	}
	return namespaceWait, nil
}

// reconcilerTest creates a Widget, waits for its ConfigMap, changes the
// Widget's color and waits for the ConfigMap to follow, then deletes the
// namespace: waiting until it is gone when namespaces go, for as long as
// it returns.
func reconcilerTest(ctx context.Context, c client.Client, namespace string, namespacesGo bool) (time.Duration, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil {
		return 0, err
	}
	w := newWidget(namespace, "w")
	if err := unstructured.SetNestedField(w.Object, "blue", "spec", "color"); err != nil {
		return 0, err
	}
	if err := c.Create(ctx, w); err != nil {
		return 0, err
	}
	if err := waitConfigMap(ctx, c, w, "blue"); err != nil {
		return 0, err
	}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"color":"green"}}`))
	if err := c.Patch(ctx, w, patch); err != nil {
		return 0, err
	}
	if err := waitConfigMap(ctx, c, w, "green"); err != nil {
		return 0, err
	}
	if err := c.Delete(ctx, ns); err != nil {
		return 0, err
	}
	if !namespacesGo {
		return 0, nil
	}
	start := time.Now()
	err := poll(ctx, "namespace "+namespace+" gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	return time.Since(start), err
}

// waitConfigMap waits until w's ConfigMap exists, is controlled by w and
// holds color.
func waitConfigMap(ctx context.Context, c client.Client, w *unstructured.Unstructured, color string) error {
	key := client.ObjectKey{Namespace: w.GetNamespace(), Name: w.GetName() + "-widget"}
	return poll(ctx, "ConfigMap "+key.String()+" with color "+color, func(ctx context.Context) (bool, error) {
		var cm corev1.ConfigMap
		err := c.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && metav1.IsControlledBy(&cm, w) && cm.Data["color"] == color, err
	})
}

func poll(ctx context.Context, what string, condition wait.ConditionWithContextFunc) error {
	if err := wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, condition); err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}
