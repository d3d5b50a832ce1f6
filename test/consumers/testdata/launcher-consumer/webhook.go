package widgets

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DefaultColor is the color a Widget created without one gets.
const DefaultColor = "blue"

// Palette is the colors a Widget may have.
var Palette = []string{"blue", "green", "red"}

// SetupWebhookWithManager serves the defaulting and validating webhooks of
// config/webhook/manifests.yaml on mgr's webhook server, at the paths
// ctrl.NewWebhookManagedBy would give them: it refuses the Widget of this
// example, which is unstructured (its conversion check wants a type).
// kubebuilder scaffolds webhooks in a package of their own
// (internal/webhook/v1); here they sit beside the reconciler, for both
// suites: the launcher's (suite_test.go) and envtest's (internal/controller).
//
// +kubebuilder:webhook:path=/mutate-example-com-v1-widget,mutating=true,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=mwidget-v1.example.com,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-example-com-v1-widget,mutating=false,failurePolicy=fail,sideEffects=None,groups=example.com,resources=widgets,verbs=create;update,versions=v1,name=vwidget-v1.example.com,admissionReviewVersions=v1
func SetupWebhookWithManager(mgr ctrl.Manager) {
	server := mgr.GetWebhookServer()
	server.Register("/mutate-example-com-v1-widget", admission.WithDefaulter[*unstructured.Unstructured](mgr.GetScheme(), widgetWebhook{}))
	server.Register("/validate-example-com-v1-widget", admission.WithValidator[*unstructured.Unstructured](mgr.GetScheme(), widgetWebhook{}))
}

// widgetWebhook defaults a Widget's spec.color and keeps it in the palette.
type widgetWebhook struct{}

func (widgetWebhook) Default(_ context.Context, w *unstructured.Unstructured) error {
	color, _, err := unstructured.NestedString(w.Object, "spec", "color")
	if err != nil || color != "" {
		return err
	}
	return unstructured.SetNestedField(w.Object, DefaultColor, "spec", "color")
}

func (widgetWebhook) ValidateCreate(_ context.Context, w *unstructured.Unstructured) (admission.Warnings, error) {
	return nil, validateColor(w)
}

func (widgetWebhook) ValidateUpdate(_ context.Context, _, w *unstructured.Unstructured) (admission.Warnings, error) {
	return nil, validateColor(w)
}

func (widgetWebhook) ValidateDelete(context.Context, *unstructured.Unstructured) (admission.Warnings, error) {
	return nil, nil
}

func validateColor(w *unstructured.Unstructured) error {
	color, _, err := unstructured.NestedString(w.Object, "spec", "color")
	if err != nil {
		return err
	}
	if !slices.Contains(Palette, color) {
		return fmt.Errorf("spec.color: %q is not in the palette: write one of %v", color, Palette)
	}
	return nil
}
