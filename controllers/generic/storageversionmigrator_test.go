package generic

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

// mapperServing is a REST mapper over a discovery that lists the given
// resources.
func mapperServing(resources ...*metav1.APIResourceList) *restmapper.DeferredDiscoveryRESTMapper {
	discovery := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: resources}}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery))
}

var (
	configMaps = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}}
	migrations = &metav1.APIResourceList{GroupVersion: "storagemigration.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "storageversionmigrations", Kind: "StorageVersionMigration"}}}
	// v1beta1 alone is not the API the migrator reads.
	betaMigrations = &metav1.APIResourceList{GroupVersion: "storagemigration.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "storageversionmigrations", Kind: "StorageVersionMigration"}}}
)

// Without its API or without informers that report resource versions the
// migrator has nothing to do and does not start (no error); served, it
// needs the garbage collector's caches, and says so. Its identity is never
// asked for in these cases (the context has no client builder).
func TestNewWithoutWhatItNeeds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		served    []*metav1.APIResourceList
		gatesOff  []featuregate.Feature
		wantError error
	}{
		{name: "API not served", served: []*metav1.APIResourceList{configMaps}},
		{name: "only v1beta1 served", served: []*metav1.APIResourceList{configMaps, betaMigrations}},
		{name: "informers without resource versions", served: []*metav1.APIResourceList{configMaps, migrations}, gatesOff: []featuregate.Feature{featuregate.Feature(clientgofeatures.InformerResourceVersion)}},
		{name: "no garbage collector", served: []*metav1.APIResourceList{configMaps, migrations}, wantError: errNoGarbageCollector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gate := range tc.gatesOff {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, gate, false)
			}
			c := &controller.Context{RESTMapper: mapperServing(tc.served...)}
			run, err := newStorageVersionMigrator(t.Context(), c)
			if !errors.Is(err, tc.wantError) {
				t.Fatalf("error %v, want %v", err, tc.wantError)
			}
			if run != nil {
				t.Error("the migrator would run")
			}
		})
	}
}

func TestRaiseLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{name: "kube-controller-manager's defaults", qps: 50, burst: 100, wantQPS: 1000, wantBurst: 10000},
		{name: "client-go's defaults when unset", qps: 0, burst: 0, wantQPS: rest.DefaultQPS * migrationQPSFactor, wantBurst: rest.DefaultBurst * migrationBurstFactor},
		{name: "unlimited stays unlimited", qps: -1, burst: 0, wantQPS: -migrationQPSFactor, wantBurst: rest.DefaultBurst * migrationBurstFactor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := &rest.Config{QPS: tc.qps, Burst: tc.burst}
			raised := raiseMigrationLimits(config)
			if raised.QPS != tc.wantQPS || raised.Burst != tc.wantBurst {
				t.Errorf("QPS %v, burst %d; want %v, %d", raised.QPS, raised.Burst, tc.wantQPS, tc.wantBurst)
			}
			if config.QPS != tc.qps || config.Burst != tc.burst {
				t.Errorf("the config passed in changed to QPS %v, burst %d", config.QPS, config.Burst)
			}
		})
	}
}
