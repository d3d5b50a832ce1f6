package manager

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

// objectOrMetadataInformers is the Context's ObjectOrMetadataInformerFactory:
// controller-manager's (k8s.io/controller-manager/pkg/informerfactory),
// typed informers where the shared factory has them and metadata-only ones
// for the rest, except that a resource whose typed informer a controller's
// own factory holds (a plug-in's API, e.g. NetworkClaims) is given that
// informer. So the garbage collector, which watches every resource, shares
// the informer of the controller that needs the whole objects instead of
// listing and decoding each of them a second time, only for their metadata;
// with 100,000 objects that second list is seconds of a start-up.
type objectOrMetadataInformers struct {
	typed    informers.SharedInformerFactory
	metadata metadatainformer.SharedInformerFactory
	// extra returns the controllers' own factories, which they add to the
	// Context while they are built, before anything asks for a resource
	// (the garbage collector asks once it runs).
	extra func() []controller.InformerFactory
}

func (f *objectOrMetadataInformers) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	if informer, err := f.typed.ForResource(resource); err == nil {
		return informer, nil
	}
	for _, factory := range f.extra() {
		if shared, ok := factory.(controller.ResourceInformerFactory); ok {
			if informer, err := shared.ForResource(resource); err == nil {
				return informer, nil
			}
		}
	}
	return f.metadata.ForResource(resource), nil
}

// Start starts the informers asked for since the last Start, the ones of
// the controllers' factories included (a factory starts each informer
// once).
func (f *objectOrMetadataInformers) Start(stopCh <-chan struct{}) {
	f.typed.Start(stopCh)
	for _, factory := range f.extra() {
		if _, ok := factory.(controller.ResourceInformerFactory); ok {
			factory.Start(stopCh)
		}
	}
	f.metadata.Start(stopCh)
}
