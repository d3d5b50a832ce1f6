package controlplane

import (
	"fmt"

	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/registry/networkclaim"
)

// networkingStorage serves networking.x-k8s.io alongside the built-in groups.
type networkingStorage struct{}

func (networkingStorage) GroupName() string { return networking.GroupName }

func (networkingStorage) NewRESTStorage(config serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(networking.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	if !config.ResourceEnabled(v1alpha1.SchemeGroupVersion.WithResource("networkclaims")) {
		return info, nil
	}
	claims, status, err := networkclaim.NewREST(legacyscheme.Scheme, optsGetter)
	if err != nil {
		return info, fmt.Errorf("networkclaims storage: %w", err)
	}
	info.VersionedResourcesStorageMap[v1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"networkclaims":        claims,
		"networkclaims/status": status,
	}
	return info, nil
}
