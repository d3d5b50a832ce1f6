package networkclaim

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
)

// REST is the storage of networkclaims.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets kubectl accept "nc".
func (r *REST) ShortNames() []string { return []string{"nc"} }

// NewREST returns the storage of networkclaims and of their status subresource.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	s := newStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &networking.NetworkClaim{} },
		NewListFunc:               func() runtime.Object { return &networking.NetworkClaimList{} },
		DefaultQualifiedResource:  networking.Resource("networkclaims"),
		SingularQualifiedResource: networking.Resource("networkclaim"),
		CreateStrategy:            s,
		UpdateStrategy:            s,
		DeleteStrategy:            s,
		ResetFieldsStrategy:       s,
		TableConvertor:            tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, nil, err
	}
	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy{s}
	statusStore.ResetFieldsStrategy = statusStrategy{s}
	return &REST{store}, &StatusREST{store: &statusStore}, nil
}

// StatusREST is the storage of the status subresource.
type StatusREST struct {
	store *genericregistry.Store
}

var _ = rest.Patcher(&StatusREST{})

// New returns an empty NetworkClaim.
func (r *StatusREST) New() runtime.Object { return &networking.NetworkClaim{} }

// Destroy does nothing: the main resource's store owns the storage.
func (r *StatusREST) Destroy() {}

// Get returns the claim, for patches of its status.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the claim's status only.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// The subresource never creates: forceAllowCreate stays false.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields are the fields a status write leaves alone.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the claim as the main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
