package servicelocation

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/validation"
)

// strategy governs writes of ServiceLocations: all spec, no status; names
// are chosen, never generated (the name says which service it locates).
type strategy struct {
	runtime.ObjectTyper
}

var _ rest.RESTCreateUpdateStrategy = strategy{}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) GenerateName(base string) string { return names.SimpleNameGenerator.GenerateName(base) }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*controlplane.ServiceLocation).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	l, oldL := obj.(*controlplane.ServiceLocation), old.(*controlplane.ServiceLocation)
	if !apiequality.Semantic.DeepEqual(l.Spec, oldL.Spec) {
		l.Generation = oldL.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateServiceLocation(obj.(*controlplane.ServiceLocation))
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateServiceLocationUpdate(obj.(*controlplane.ServiceLocation), old.(*controlplane.ServiceLocation))
}

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
