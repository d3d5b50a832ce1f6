package v1

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	shopv1 "example.com/kubebuilder-project/api/v1"
)

// nolint:unused
// log is for logging in this package.
var gadgetlog = logf.Log.WithName("gadget-resource")

// SetupGadgetWebhookWithManager registers the webhook for Gadget in the
// manager: defaulting, validation, and conversion (v1 converts to the v2 hub).
func SetupGadgetWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &shopv1.Gadget{}).
		WithValidator(&GadgetCustomValidator{}).
		WithDefaulter(&GadgetCustomDefaulter{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-shop-example-com-v1-gadget,mutating=true,failurePolicy=fail,sideEffects=None,groups=shop.example.com,resources=gadgets,verbs=create;update,versions=v1,name=mgadget-v1.kb.io,admissionReviewVersions=v1

// GadgetCustomDefaulter sets default values on the Gadget resource when it
// is created or updated: the color blue.
type GadgetCustomDefaulter struct{}

// Default implements admission.Defaulter.
func (d *GadgetCustomDefaulter) Default(_ context.Context, gadget *shopv1.Gadget) error {
	gadgetlog.Info("Defaulting for Gadget", "name", gadget.GetName())
	if gadget.Spec.Color == "" {
		gadget.Spec.Color = "blue"
	}
	return nil
}

// +kubebuilder:webhook:path=/validate-shop-example-com-v1-gadget,mutating=false,failurePolicy=fail,sideEffects=None,groups=shop.example.com,resources=gadgets,verbs=create;update,versions=v1,name=vgadget-v1.kb.io,admissionReviewVersions=v1

// GadgetCustomValidator validates the Gadget resource when it is created,
// updated or deleted: its size is at most 10.
type GadgetCustomValidator struct{}

// ValidateCreate implements admission.Validator.
func (v *GadgetCustomValidator) ValidateCreate(_ context.Context, gadget *shopv1.Gadget) (admission.Warnings, error) {
	return nil, validateSize(gadget)
}

// ValidateUpdate implements admission.Validator.
func (v *GadgetCustomValidator) ValidateUpdate(_ context.Context, _, gadget *shopv1.Gadget) (admission.Warnings, error) {
	return nil, validateSize(gadget)
}

// ValidateDelete implements admission.Validator.
func (v *GadgetCustomValidator) ValidateDelete(context.Context, *shopv1.Gadget) (admission.Warnings, error) {
	return nil, nil
}

func validateSize(gadget *shopv1.Gadget) error {
	if gadget.Spec.Size > 10 {
		return fmt.Errorf("spec.size: %d is over 10", gadget.Spec.Size)
	}
	return nil
}
