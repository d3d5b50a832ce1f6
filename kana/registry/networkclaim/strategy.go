// Package networkclaim is the storage of NetworkClaims: a
// genericregistry.Store with the strategies that keep spec and status apart.
package networkclaim

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
)

// strategy governs writes to the main resource: spec is the user's, status
// is left as it was.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func newStrategy(typer runtime.ObjectTyper) strategy {
	return strategy{typer, names.SimpleNameGenerator}
}

var _ rest.RESTCreateUpdateStrategy = strategy{}

func (strategy) NamespaceScoped() bool { return false }

// GetResetFields: writes to the main resource never set status.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"networking.x-k8s.io/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	claim := obj.(*networking.NetworkClaim)
	claim.Status = networking.NetworkClaimStatus{}
	claim.Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	claim, oldClaim := obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim)
	claim.Status = oldClaim.Status
	// generation counts changes of intent only.
	if !apiequality.Semantic.DeepEqual(claim.Spec, oldClaim.Spec) {
		claim.Generation = oldClaim.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateNetworkClaim(obj.(*networking.NetworkClaim))
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNetworkClaimUpdate(obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim))
}

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// statusStrategy governs writes to the status subresource: status is the
// registry's, spec and metadata are left as they were.
type statusStrategy struct {
	strategy
}

// GetResetFields: writes to status never set spec.
func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"networking.x-k8s.io/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec")),
	}
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	claim, oldClaim := obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim)
	claim.Spec = oldClaim.Spec
	metav1.ResetObjectMetaForStatus(&claim.ObjectMeta, &oldClaim.ObjectMeta)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNetworkClaimStatusUpdate(obj.(*networking.NetworkClaim), old.(*networking.NetworkClaim))
}
