// Package servicelocation is the storage of ServiceLocations: where the
// servers that service references name are.
package servicelocation

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
)

// REST is the storage of servicelocations.
type REST struct {
	*genericregistry.Store
}

// NewREST returns the storage of servicelocations.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	s := strategy{scheme}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &controlplane.ServiceLocation{} },
		NewListFunc:               func() runtime.Object { return &controlplane.ServiceLocationList{} },
		DefaultQualifiedResource:  controlplane.Resource("servicelocations"),
		SingularQualifiedResource: controlplane.Resource("servicelocation"),
		CreateStrategy:            s,
		UpdateStrategy:            s,
		DeleteStrategy:            s,
		TableConvertor:            tableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
