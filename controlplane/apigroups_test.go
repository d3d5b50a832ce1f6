package controlplane

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

type fakeStorage struct{ rest.Storage }

// An added group installs exactly the resources the server serves: a
// subresource goes with its resource, and a group that is off builds no
// storage at all.
func TestGroupStorageInstallsServedResources(t *testing.T) {
	v1 := schema.GroupVersion{Group: "example.com", Version: "v1"}
	built := 0
	group := APIGroup{
		Name:     v1.Group,
		Versions: []APIGroupVersion{{Version: v1.Version}},
		NewStorage: func(*runtime.Scheme, generic.RESTOptionsGetter) (map[string]map[string]rest.Storage, error) {
			built++
			return map[string]map[string]rest.Storage{v1.Version: {
				"widgets": fakeStorage{}, "widgets/status": fakeStorage{}, "gadgets": fakeStorage{},
			}}, nil
		},
	}
	for _, tc := range []struct {
		name      string
		resources func(*serverstorage.ResourceConfig)
		want      []string
	}{
		{"version served", func(r *serverstorage.ResourceConfig) { r.EnableVersions(v1) }, []string{"gadgets", "widgets", "widgets/status"}},
		{"one resource off", func(r *serverstorage.ResourceConfig) {
			r.EnableVersions(v1)
			r.DisableResources(v1.WithResource("widgets"))
		}, []string{"gadgets"}},
		{"group off", func(r *serverstorage.ResourceConfig) { r.DisableVersions(v1) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built = 0
			resources := serverstorage.NewResourceConfig()
			tc.resources(resources)
			info, err := groupStorage{group: group}.NewRESTStorage(resources, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(maps.Keys(info.VersionedResourcesStorageMap[v1.Version]))
			if !slices.Equal(got, tc.want) {
				t.Errorf("installed %v, want %v", got, tc.want)
			}
			if tc.want == nil && built != 0 {
				t.Error("storage was built for a group that is not served")
			}
			for _, media := range info.NegotiatedSerializer.SupportedMediaTypes() {
				if media.MediaType == runtime.ContentTypeProtobuf {
					t.Error("a group without protobuf offers protobuf")
				}
			}
		})
	}
}
