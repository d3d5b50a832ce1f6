package manager

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

// genericInformer is an informer that a controller's own factory holds.
type genericInformer struct{ informer cache.SharedIndexInformer }

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }

func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), schema.GroupResource{})
}

// resourceFactory is a controller's own factory that holds the informer of
// one resource and offers it by resource.
type resourceFactory struct {
	ownInformerFactory
	resource schema.GroupVersionResource
	informer genericInformer
	starts   int
}

var _ controller.ResourceInformerFactory = &resourceFactory{}

func (f *resourceFactory) Start(<-chan struct{}) { f.starts++ }

func (f *resourceFactory) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	if resource != f.resource {
		return nil, fmt.Errorf("no informer for %s", resource)
	}
	return f.informer, nil
}

// A resource that a controller's own factory holds the typed informer of
// is given that informer, not a metadata-only one that would list the
// same objects again; a resource of the shared typed factory gets its
// informer, and any other a metadata-only one, as in
// kube-controller-manager.
func TestObjectOrMetadataInformersShareControllersInformers(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	typed := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	metadata := metadatainformer.NewSharedInformerFactory(metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), 0)
	own := &resourceFactory{resource: widgets, informer: genericInformer{cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{})}}
	// A factory that does not offer its informers by resource.
	other := &ownInformerFactory{started: make(chan struct{})}
	f := &objectOrMetadataInformers{typed: typed, metadata: metadata,
		extra: func() []controller.InformerFactory { return []controller.InformerFactory{other, own} }}

	for _, tc := range []struct {
		name     string
		resource schema.GroupVersionResource
		want     cache.SharedIndexInformer
	}{
		{"of the shared typed factory", configMaps, typed.Core().V1().ConfigMaps().Informer()},
		{"of a controller's own factory", widgets, own.informer.informer},
		{"of no typed factory", gadgets, metadata.ForResource(gadgets).Informer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.ForResource(tc.resource)
			if err != nil {
				t.Fatal(err)
			}
			// Typed informers are wrapped anew on each call: the cache
			// tells which informer it is.
			if got.Informer().GetIndexer() != tc.want.GetIndexer() {
				t.Errorf("ForResource(%s) is not the informer it should share", tc.resource)
			}
		})
	}

	// The collector starts what it asked for through the factory: the
	// controllers' factories that offer informers are started too.
	f.Start(make(chan struct{}))
	if own.starts != 1 {
		t.Errorf("the controller's own factory was started %d times, want 1", own.starts)
	}
}
