package widgets

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"sigs.k8s.io/sample-generic-controlplane/testenv"
	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

// k8sClient reads and writes through the API server, not the manager's cache.
var k8sClient client.Client

// TestMain runs the suite against one control plane, as envtest suites do
// in BeforeSuite/AfterSuite: the binary comes from $SGCP_BINARY or $PATH.
func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) (code int) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The CRD and the webhook configurations as the project's manifests
	// have them: the launcher points the webhooks at the webhook server
	// below, and returns once the API server calls them.
	env, err := testenv.Start(ctx, testenv.Options{
		CRDPaths: []string{"config/crd"},
		Webhooks: &install.WebhookOptions{Paths: []string{"config/webhook/manifests.yaml"}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()

	mgr, err := ctrl.NewManager(env.ClientConfig, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, // no metrics listener in a test
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    env.Webhooks.LocalServingHost,
			Port:    env.Webhooks.LocalServingPort,
			CertDir: env.Webhooks.LocalServingCertDir,
		}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	SetupWebhookWithManager(mgr)
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-stopped; err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
			code = 1
		}
	}()
	// The webhooks are in effect, and take requests once their server
	// listens.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return mgr.GetWebhookServer().StartedChecker()(nil) == nil, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhook server:", err)
		return 1
	}
	if k8sClient, err = client.New(env.ClientConfig, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// The webhooks are in effect when the suite starts: the first Widget
// without a color is given the default one, and one of a color not in the
// palette is refused, with no retry (envtest suites poll for this).
func TestWebhooks(t *testing.T) {
	colorless := NewWidget("default", "colorless")
	if err := k8sClient.Create(t.Context(), colorless, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(colorless.Object, "spec", "color"); color != DefaultColor {
		t.Errorf("a Widget created without a color has color %q, want the default %q", color, DefaultColor)
	}
	purple := NewWidget("default", "purple")
	purple.Object["spec"] = map[string]any{"color": "purple"}
	err := k8sClient.Create(t.Context(), purple, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), `admission webhook "vwidget-v1.example.com" denied the request`) {
		t.Errorf("creating a purple Widget: %v, want the validating webhook's refusal", err)
	}
}

// The reconciler's ConfigMap goes with its Widget: the garbage collector
// runs, which envtest does not.
func TestConfigMapIsCollectedWithItsWidget(t *testing.T) {
	ns := createNamespace(t, "collected")
	widget := createWidget(t, ns, "blue")
	if err := k8sClient.Delete(t.Context(), widget, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the garbage collector deletes blue-config", gone(&corev1.ConfigMap{}, client.ObjectKey{Namespace: ns, Name: "blue-config"}))
}

// A deleted namespace goes, Widgets and ConfigMaps with it: the namespace
// controller runs, which envtest does not.
func TestNamespaceIsDeletedWithItsWidgets(t *testing.T) {
	ns := createNamespace(t, "deleted")
	createWidget(t, ns, "red")
	if err := k8sClient.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace controller removes namespace "+ns, gone(&corev1.Namespace{}, client.ObjectKey{Name: ns}))
}

func createNamespace(t *testing.T, name string) string {
	t.Helper()
	if err := k8sClient.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// createWidget creates a Widget of that color, named after it, and waits
// for the reconciler's ConfigMap.
func createWidget(t *testing.T, namespace, color string) client.Object {
	t.Helper()
	widget := NewWidget(namespace, color)
	widget.Object["spec"] = map[string]any{"color": color}
	if err := k8sClient.Create(t.Context(), widget); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reconciler creates "+color+"-config", func(ctx context.Context) (bool, error) {
		var config corev1.ConfigMap
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: color + "-config"}, &config)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && metav1.IsControlledBy(&config, widget) && config.Data["color"] == color, err
	})
	return widget
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
func gone(obj client.Object, key client.ObjectKey) wait.ConditionWithContextFunc {
	return func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}
