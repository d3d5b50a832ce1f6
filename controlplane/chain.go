package controlplane

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/client-go/kubernetes"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	genericserver "k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic/server"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
)

// createServerChain wires the servers as upstream's generic sample does
// (apiextensions → generic native APIs → aggregator), with our storage
// providers in place of some of upstream's, and the added API groups. It
// returns the aggregator, the head of the chain, and the core storage,
// which creates kube-system before the chain serves.
func createServerChain(config genericserver.CompletedConfig, groups []APIGroup) (*aggregatorapiserver.APIAggregator, *coreStorage, error) {
	// 1. CRDs
	notFoundHandler := notfoundhandler.New(config.ControlPlane.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	apiExtensionsServer, err := config.APIExtensions.New(genericapiserver.NewEmptyDelegateWithCustomHandler(notFoundHandler))
	if err != nil {
		return nil, nil, fmt.Errorf("creating apiextensions-apiserver: %w", err)
	}
	crdAPIEnabled := config.APIExtensions.GenericConfig.MergedResourceConfig.ResourceEnabled(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))

	// 2. Natively implemented resources
	nativeAPIs, err := config.ControlPlane.New("sample-generic-controlplane", apiExtensionsServer.GenericAPIServer)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the generic control plane apiserver: %w", err)
	}
	client, err := kubernetes.NewForConfig(config.ControlPlane.Generic.LoopbackClientConfig)
	if err != nil {
		return nil, nil, err
	}
	core, providers, err := storageProviders(config, client, groups)
	if err != nil {
		return nil, nil, err
	}
	if err := nativeAPIs.InstallAPIs(providers...); err != nil {
		return nil, nil, fmt.Errorf("installing APIs: %w", err)
	}

	// 3. Aggregator for APIServices, discovery and OpenAPI
	aggregator, err := controlplaneapiserver.CreateAggregatorServer(config.Aggregator, nativeAPIs.GenericAPIServer,
		apiExtensionsServer.Informers.Apiextensions().V1().CustomResourceDefinitions(), crdAPIEnabled,
		apiServicePriorities(groups))
	if err != nil {
		return nil, nil, fmt.Errorf("creating kube-aggregator: %w", err)
	}
	if err := addRemoteAvailability(aggregator, config.Aggregator); err != nil {
		return nil, nil, fmt.Errorf("creating the remote APIService availability controller: %w", err)
	}
	return aggregator, core, nil
}

// storageProviders are upstream's generic storage providers, with the RBAC
// one given a bootstrap hook that does not sleep before its first attempt
// and the core one keeping its namespaces storage (returned too), and one
// per added API group.
func storageProviders(config genericserver.CompletedConfig, client kubernetes.Interface, groups []APIGroup) (*coreStorage, []controlplaneapiserver.RESTStorageProvider, error) {
	providers, err := config.ControlPlane.GenericStorageProviders(client.Discovery())
	if err != nil {
		return nil, nil, fmt.Errorf("creating storage providers: %w", err)
	}
	if providers, err = withFastRBACBootstrap(providers); err != nil {
		return nil, nil, err
	}
	core, err := withCoreStorage(providers)
	if err != nil {
		return nil, nil, err
	}
	// Each is served only when its versions are enabled (defaults, feature
	// gate, --runtime-config).
	for _, g := range groups {
		providers = append(providers, groupStorage{group: g})
	}
	return core, providers, nil
}

// withCoreStorage puts a coreStorage in place of upstream's core provider
// and returns it.
func withCoreStorage(providers []controlplaneapiserver.RESTStorageProvider) (*coreStorage, error) {
	for i, p := range providers {
		if generic, ok := p.(*corerest.GenericConfig); ok {
			core := &coreStorage{GenericConfig: generic}
			providers[i] = core
			return core, nil
		}
	}
	return nil, fmt.Errorf("no %T among upstream's storage providers to create kube-system with", &corerest.GenericConfig{})
}

// rbacStorage is upstream's RBAC storage with a faster bootstrap hook
// (bootstrap.RBACPolicyHook).
type rbacStorage struct {
	rbacrest.RESTStorageProvider
}

// PostStartHook replaces upstream's rbac/bootstrap-roles hook under the same name.
func (rbacStorage) PostStartHook() (string, genericapiserver.PostStartHookFunc, error) {
	return rbacrest.PostStartHookName, bootstrap.RBACPolicyHook(), nil
}

// withFastRBACBootstrap puts rbacStorage in place of upstream's RBAC
// provider. Not finding it is an error rather than a silent return of the
// one-second bootstrap wait, should upstream change the provider's type.
func withFastRBACBootstrap(providers []controlplaneapiserver.RESTStorageProvider) ([]controlplaneapiserver.RESTStorageProvider, error) {
	for i, p := range providers {
		if rbac, ok := p.(rbacrest.RESTStorageProvider); ok {
			providers[i] = rbacStorage{RESTStorageProvider: rbac}
			return providers, nil
		}
	}
	return nil, fmt.Errorf("no %T among upstream's storage providers to give the fast RBAC bootstrap hook", rbacrest.RESTStorageProvider{})
}
