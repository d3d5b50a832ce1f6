// Package controller holds what every in-process controller is built
// from: clients per controller identity, shared informers and a REST mapper.
package controller

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// Context is shared by the controllers of one manager.
type Context struct {
	// ClientBuilder returns clients that authenticate as the service account
	// kube-system/<name>, so each controller acts with the permissions of
	// its bootstrap role (system:controller:<name>) and nothing more.
	ClientBuilder clientbuilder.ControllerClientBuilder
	// InformerFactory holds typed informers, started once every controller
	// has registered the ones it needs.
	InformerFactory informers.SharedInformerFactory
	// ObjectOrMetadataInformerFactory gives typed informers where the
	// factory has them, then those of ExtraInformerFactories that are
	// ResourceInformerFactories, and metadata-only informers for
	// everything else (custom resources included).
	ObjectOrMetadataInformerFactory informerfactory.InformerFactory
	// RESTMapper follows discovery; the manager resets it periodically so
	// that resources of CRDs created after start are mapped.
	RESTMapper *restmapper.DeferredDiscoveryRESTMapper
	// ExtraInformerFactories are informer factories that controllers
	// built for clientsets of their own (e.g. the generated clientset of a
	// plug-in's API group, which InformerFactory does not know). New adds
	// its own here, and the manager runs it as it runs the shared ones:
	// starts it once every controller is built, waits for its caches
	// before it reports the controllers synced, and shuts it down when
	// they stop.
	ExtraInformerFactories []InformerFactory
	// InformersStarted is closed once the informers above are started.
	InformersStarted chan struct{}
	// RootCA is the PEM bundle that verifies the API server.
	RootCA []byte
	// RootClient acts as the manager itself (system:kube-controller-manager).
	// Only the service-account token controller uses it, as in
	// kube-controller-manager: it mints tokens for every service account.
	RootClient kubernetes.Interface
	// ReplicaIdentity names this manager replica (its Lease holder
	// identity when electing a leader), e.g. as the host of events, so
	// that one can tell which replica decided.
	ReplicaIdentity string
	// GraphBuilder is the garbage collector's dependency graph: a cache of
	// the objects of every resource the collector monitors. The garbage
	// collector sets it when it is built, first in the registry; it stays
	// nil when the collector is disabled or could not start. The storage
	// version migrator migrates the objects it caches, as in
	// kube-controller-manager.
	GraphBuilder *garbagecollector.GraphBuilder
	// Settings are the generic controllers' flags.
	Settings Settings
}

// TrimManagedFields is the informer transform kube-controller-manager uses:
// controllers never read managed fields, which are often most of an object,
// so caches drop them. An update sent without them keeps the stored ones.
func TrimManagedFields(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// InformerFactory is what the manager needs of an informer factory that a
// controller builds: client-go's generated factories have these methods.
type InformerFactory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}

// ResourceInformerFactory is an InformerFactory whose informers other
// controllers may share by resource: ObjectOrMetadataInformerFactory gives
// its informer of a resource to a controller that asks for that resource
// (the garbage collector asks for every one), rather than start a
// metadata-only informer that lists and decodes the same objects a second
// time. client-go's generated factories have a ForResource of their own
// package's GenericInformer; a controller wraps its factory to return
// client-go's, which has the same methods, and to refuse every resource but
// those it watches itself: a factory makes an informer of any resource of
// its clientset, and that informer would list with the controller's
// credentials, which grant no more than the controller needs.
type ResourceInformerFactory interface {
	InformerFactory
	ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error)
}
