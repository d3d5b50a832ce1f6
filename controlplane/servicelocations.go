package controlplane

import (
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/install"
	controlplaneopenapi "sigs.k8s.io/sample-generic-controlplane/apis/controlplane/openapi"
	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/registry/servicelocation"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/remoteavailability"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/serviceresolver"
)

// serviceLocationsResource is what the service resolver reads.
var serviceLocationsResource = v1alpha1.SchemeGroupVersion.WithResource("servicelocations")

// The built-in group joins the scheme as upstream's built-in groups do, at
// init; added groups join it when they are added (AddAPIGroup).
func init() {
	utilruntime.Must(installIntoScheme(serviceLocationsGroup()))
}

// serviceLocationsGroup is controlplane.x-k8s.io, the generic control
// plane's own group: ServiceLocations, where the servers that service
// references name are (docs/architecture.md, "Service references").
func serviceLocationsGroup() APIGroup {
	return APIGroup{
		Name:     controlplane.GroupName,
		Versions: []APIGroupVersion{{Version: v1alpha1.SchemeGroupVersion.Version, Priority: 9}},
		// After every built-in group, before custom resources.
		Priority:  15100,
		Resources: []string{serviceLocationsResource.Resource},
		AddToScheme: func(scheme *runtime.Scheme) error {
			install.Install(scheme)
			return nil
		},
		OpenAPIDefinitions: controlplaneopenapi.GetOpenAPIDefinitions,
		// Served and stored as protobuf, as built-in groups are.
		Protobuf: true,
		NewStorage: func(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error) {
			locations, err := servicelocation.NewREST(scheme, optsGetter)
			if err != nil {
				return nil, err
			}
			return map[string]map[string]rest.Storage{
				v1alpha1.SchemeGroupVersion.Version: {serviceLocationsResource.Resource: locations},
			}, nil
		},
	}
}

// newServiceResolver is the resolver of the aggregator, the admission
// webhooks and the CRD conversion webhooks. When ServiceLocations are
// served, it reads them from an informer of informers, which the server
// starts with the others; else every reference is resolved by DNS.
func newServiceResolver(loopback *restclient.Config, resources *serverstorage.ResourceConfig, informers informers.SharedInformerFactory) (*serviceresolver.Resolver, error) {
	host, err := url.Parse(loopback.Host)
	if err != nil {
		return nil, fmt.Errorf("the loopback client's host %q: %w", loopback.Host, err)
	}
	if !resources.ResourceEnabled(serviceLocationsResource) {
		return serviceresolver.New(nil, host), nil
	}
	informer, err := newServiceLocationInformer(loopback)
	if err != nil {
		return nil, err
	}
	// The factory starts it with its own informers, and waits for it too.
	informers.InformerFor(&v1alpha1.ServiceLocation{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return informer })
	return serviceresolver.New(informer, host), nil
}

// newServiceLocationInformer watches ServiceLocations through a REST client
// of their group alone: the generated clientset would bring every group of
// ours into the generic layer.
func newServiceLocationInformer(loopback *restclient.Config) (cache.SharedIndexInformer, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	config := restclient.CopyConfig(loopback)
	config.GroupVersion = &v1alpha1.SchemeGroupVersion
	config.APIPath = "/apis"
	// Protobuf, as the loopback clients of built-in types ask for, JSON
	// accepted.
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	config.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := restclient.RESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("creating the ServiceLocation client: %w", err)
	}
	lw := cache.NewListWatchFromClient(client, serviceLocationsResource.Resource, "", fields.Everything())
	return cache.NewSharedIndexInformer(lw, &v1alpha1.ServiceLocation{}, 0, cache.Indexers{}), nil
}

// addRemoteAvailability runs the controller that sets the Available
// condition of the APIServices served elsewhere, in place of upstream's,
// which resolves them through Services and EndpointSlices (the aggregator
// is configured with DisableRemoteAvailableConditionController). It runs in
// every server, as upstream's does, in a post-start hook of the same name.
func addRemoteAvailability(aggregator *aggregatorapiserver.APIAggregator, config aggregatorapiserver.CompletedConfig) error {
	resolver, ok := config.ExtraConfig.ServiceResolver.(*serviceresolver.Resolver)
	if !ok {
		return fmt.Errorf("the aggregator's service resolver is a %T, not ours", config.ExtraConfig.ServiceResolver)
	}
	client, err := aggregatorclient.NewForConfig(config.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return err
	}
	var dial *transport.DialHolder
	if t := config.ExtraConfig.ProxyTransport; t != nil && t.DialContext != nil {
		dial = &transport.DialHolder{Dial: t.DialContext}
	}
	// The front-proxy client certificate, reloaded when its files change,
	// as the aggregator's proxy reloads it.
	var proxyCert *dynamiccertificates.DynamicCertKeyPairContent
	if certFile, keyFile := config.ExtraConfig.ProxyClientCertFile, config.ExtraConfig.ProxyClientKeyFile; certFile != "" && keyFile != "" {
		if proxyCert, err = dynamiccertificates.NewDynamicServingContentFromFiles("remote-availability-proxy-cert", certFile, keyFile); err != nil {
			return err
		}
	}
	var certKey func() ([]byte, []byte)
	if proxyCert != nil {
		certKey = proxyCert.CurrentCertKeyContent
	}
	controller, err := remoteavailability.New(aggregator.APIRegistrationInformers.Apiregistration().V1().APIServices(),
		resolver.Informer(), client.ApiregistrationV1(), resolver, dial, certKey)
	if err != nil {
		return err
	}
	return aggregator.GenericAPIServer.AddPostStartHook("apiservice-status-remote-available-controller", func(ctx genericapiserver.PostStartHookContext) error {
		if proxyCert != nil {
			go proxyCert.Run(ctx, 1)
		}
		// Upstream's number of workers: a check may wait for a timeout.
		go controller.Run(ctx, 5)
		return nil
	})
}
