package controlplane

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/registry/networkclaim"
)

// networkClaimsServed is the one answer to "is NetworkClaim served?": the
// storage, the policy hook and discovery follow it. The KANA gate decides it
// (newAPIsConfig enables or disables the versions accordingly), and
// --runtime-config can only turn it off.
func networkClaimsServed(resources serverstorage.APIResourceConfigSource) bool {
	return resources.ResourceEnabled(v1alpha1.SchemeGroupVersion.WithResource("networkclaims"))
}

// networkingStorage serves networking.x-k8s.io alongside the built-in groups.
type networkingStorage struct{}

func (networkingStorage) GroupName() string { return networking.GroupName }

func (networkingStorage) NewRESTStorage(config serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(networking.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	// Our types have no protobuf encoding. Offering only the other media
	// types makes a client that prefers protobuf (as controllers and the
	// loopback client do) fall back to JSON, as it does for custom
	// resources, instead of failing to encode the response.
	info.NegotiatedSerializer = withoutProtobuf{info.NegotiatedSerializer}
	if !networkClaimsServed(config) {
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

// withoutProtobuf offers every media type of the wrapped serializer but
// protobuf.
type withoutProtobuf struct{ runtime.NegotiatedSerializer }

func (s withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range s.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}
