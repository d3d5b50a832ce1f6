package controlplane

import (
	"fmt"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// The API groups a program adds are served through upstream's machinery:
// their types join the scheme every built-in group is in, and a storage
// provider like upstream's installs them.

// schemeInstalls records the groups added to legacyscheme.Scheme. The
// scheme is process-wide and not safe to change while servers read it, so
// each group is added once, by the first options it is added to.
var schemeInstalls = struct {
	sync.Mutex
	groups sets.Set[string]
}{groups: sets.New[string]()}

func installIntoScheme(g APIGroup) error {
	schemeInstalls.Lock()
	defer schemeInstalls.Unlock()
	if schemeInstalls.groups.Has(g.Name) {
		return nil
	}
	if err := g.AddToScheme(legacyscheme.Scheme); err != nil {
		return fmt.Errorf("adding API group %s to the scheme: %w", g.Name, err)
	}
	schemeInstalls.groups.Insert(g.Name)
	return nil
}

// gatedOff reports whether the group's feature gate is off.
func (g APIGroup) gatedOff() bool {
	return g.FeatureGate != "" && !utilfeature.DefaultFeatureGate.Enabled(g.FeatureGate)
}

// openAPIDefinitions returns upstream's definitions and the groups'.
func openAPIDefinitions(groups []APIGroup) openapicommon.GetOpenAPIDefinitions {
	return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		defs := generatedopenapi.GetOpenAPIDefinitions(ref)
		for _, g := range groups {
			maps.Copy(defs, g.OpenAPIDefinitions(ref))
		}
		return defs
	}
}

// apiServicePriorities are upstream's, and the groups': the aggregator
// registers a local APIService only for the group versions listed here,
// and without one a group is missing from the unaggregated discovery
// (/apis) that older clients and RESTMappers read. A version listed but not
// served gets no APIService.
func apiServicePriorities(groups []APIGroup) map[schema.GroupVersion]controlplaneapiserver.APIServicePriority {
	priorities := controlplaneapiserver.DefaultGenericAPIServicePriorities()
	for _, g := range groups {
		for _, v := range g.Versions {
			priorities[schema.GroupVersion{Group: g.Name, Version: v.Version}] = controlplaneapiserver.APIServicePriority{Group: g.Priority, Version: v.Priority}
		}
	}
	return priorities
}

// groupStorage installs an APIGroup as upstream's storage providers install
// theirs.
type groupStorage struct{ group APIGroup }

func (s groupStorage) GroupName() string { return s.group.Name }

func (s groupStorage) NewRESTStorage(resources serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	g := s.group
	info := genericapiserver.NewDefaultAPIGroupInfo(g.Name, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	if !g.Protobuf {
		// Offering only the other media types makes a client that prefers
		// protobuf fall back to JSON, as it does for custom resources,
		// instead of failing to encode the response.
		info.NegotiatedSerializer = withoutProtobuf{info.NegotiatedSerializer}
	}
	if !resources.AnyResourceForGroupEnabled(g.Name) {
		return info, nil // not served: InstallAPIs skips a group without storage
	}
	storage, err := g.NewStorage(legacyscheme.Scheme, optsGetter)
	if err != nil {
		return info, fmt.Errorf("%s storage: %w", g.Name, err)
	}
	for version, byResource := range storage {
		gv := schema.GroupVersion{Group: g.Name, Version: version}
		for resource, store := range byResource {
			// A subresource is served with its resource.
			parent, _, _ := strings.Cut(resource, "/")
			if !resources.ResourceEnabled(gv.WithResource(parent)) {
				continue
			}
			if info.VersionedResourcesStorageMap[version] == nil {
				info.VersionedResourcesStorageMap[version] = map[string]rest.Storage{}
			}
			info.VersionedResourcesStorageMap[version][resource] = store
		}
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
