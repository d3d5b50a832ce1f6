package example_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

// Widgets are served in two versions: v1 says spec.colour, v2 (stored, the
// hub of conversions) spec.color. A project generates the deep copies with
// controller-gen; they are written out here.
var (
	widgetsV1 = schema.GroupVersion{Group: "example.com", Version: "v1"}
	widgetsV2 = schema.GroupVersion{Group: "example.com", Version: "v2"}
)

// Widget is example.com/v2.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec,omitempty"`
}

type WidgetSpec struct {
	Color string `json:"color,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// Hub makes v2 the version conversions go through.
func (*Widget) Hub() {}

// WidgetV1 is example.com/v1.
type WidgetV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV1Spec `json:"spec,omitempty"`
}

type WidgetV1Spec struct {
	Colour string `json:"colour,omitempty"`
}

func (w *WidgetV1) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// ConvertTo and ConvertFrom make v1 convertible to and from the hub.
func (w *WidgetV1) ConvertTo(hub conversion.Hub) error {
	h := hub.(*Widget)
	h.ObjectMeta, h.Spec.Color = w.ObjectMeta, w.Spec.Colour
	return nil
}

func (w *WidgetV1) ConvertFrom(hub conversion.Hub) error {
	h := hub.(*Widget)
	w.ObjectMeta, w.Spec.Colour = h.ObjectMeta, h.Spec.Color
	return nil
}

func addWidgets(scheme *runtime.Scheme) error {
	scheme.AddKnownTypeWithName(widgetsV1.WithKind("Widget"), &WidgetV1{})
	scheme.AddKnownTypeWithName(widgetsV2.WithKind("Widget"), &Widget{})
	metav1.AddToGroupVersion(scheme, widgetsV1)
	metav1.AddToGroupVersion(scheme, widgetsV2)
	return nil
}

// widgetWebhook defaults a Widget's color to blue and refuses red ones.
type widgetWebhook struct{}

func (widgetWebhook) Default(_ context.Context, w *Widget) error {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
	return nil
}

func (widgetWebhook) ValidateCreate(_ context.Context, w *Widget) (admission.Warnings, error) {
	return nil, validateWidget(w)
}

func (widgetWebhook) ValidateUpdate(_ context.Context, _, w *Widget) (admission.Warnings, error) {
	return nil, validateWidget(w)
}

func (widgetWebhook) ValidateDelete(context.Context, *Widget) (admission.Warnings, error) {
	return nil, nil
}

func validateWidget(w *Widget) error {
	if w.Spec.Color == "red" {
		return errors.New("spec.color: red widgets are sold out; choose another color")
	}
	return nil
}

func TestWidgetWebhooks(t *testing.T) {
	// The CRD and the webhook configurations as the project's manifests
	// have them; the test server points them at the webhook server below,
	// and returns once the API server calls them.
	s := cptesting.StartTestServer(t, cptesting.Options{
		CRDPaths: []string{filepath.Join("config", "crd")},
		Webhooks: &install.WebhookOptions{Paths: []string{filepath.Join("config", "webhook", "manifests.yaml")}},
	})

	scheme := runtime.NewScheme()
	if err := addWidgets(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(s.ClientConfig, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Where the test server pointed the webhooks, with its certificate.
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    s.Webhooks.LocalServingHost,
			Port:    s.Webhooks.LocalServingPort,
			CertDir: s.Webhooks.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Defaulting and validation of v2, and conversion, since v2 is a hub
	// and v1 convertible.
	err = ctrl.NewWebhookManagedBy(mgr, &Widget{}).
		WithDefaulter(widgetWebhook{}).
		WithValidator(widgetWebhook{}).
		Complete()
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)
	// The manager starts the webhook server in the background.
	eventually(t, "the webhook server listens", func(context.Context) (bool, error) {
		return mgr.GetWebhookServer().StartedChecker()(nil) == nil, nil
	})

	c, err := client.New(s.ClientConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Each webhook answers the first request made of it.
	t.Run("defaulting", func(t *testing.T) {
		w := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain"}}
		if err := c.Create(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		if w.Spec.Color != "blue" {
			t.Errorf("spec.color %q, want blue from the defaulting webhook", w.Spec.Color)
		}
	})
	t.Run("validation", func(t *testing.T) {
		w := &Widget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "red"}, Spec: WidgetSpec{Color: "red"}}
		if err := c.Create(t.Context(), w); err == nil || !strings.Contains(err.Error(), "red widgets are sold out") {
			t.Errorf("creating a red widget: %v, want it refused by the validating webhook", err)
		}
	})
	t.Run("conversion", func(t *testing.T) {
		old := &WidgetV1{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}, Spec: WidgetV1Spec{Colour: "green"}}
		if err := c.Create(t.Context(), old); err != nil {
			t.Fatal(err)
		}
		var stored Widget
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), &stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.Color != "green" {
			t.Errorf("the v1 widget read in v2: spec.color %q, want green from the conversion webhook", stored.Spec.Color)
		}
	})
}
