package generic

import (
	"context"
	"fmt"
	"sync"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	clientgofeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	svm "k8s.io/kubernetes/pkg/controller/storageversionmigrator"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// migratorName is the migrator's name, and also its identity (service
	// account) and the field manager of its writes, as in
	// kube-controller-manager. It never had another name here.
	migratorName = names.StorageVersionMigratorController
	// migrationQPSFactor and migrationBurstFactor raise the limits of the
	// clients that migrate objects, as kube-controller-manager does: a
	// migration is one request per object.
	migrationQPSFactor   = 20
	migrationBurstFactor = 100
)

// StorageVersionMigratorDescriptor is upstream's storage version migrator
// (k8s.io/kubernetes/pkg/controller/storageversionmigrator): a
// StorageVersionMigration (storagemigration.k8s.io/v1) rewrites every
// stored object of one resource, built-in or custom, so that etcd holds it
// in the current storage version and encryption; for a custom resource,
// the CRD's status.storedVersions then drops the versions migrated off.
//
// It migrates what the garbage collector caches: kube-controller-manager
// refuses to start without the collector; here
// --controllers=*,-garbagecollector (which worked before the migrator
// existed) leaves the migrator out too, and the manager says so once.
func StorageVersionMigratorDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:                 migratorName,
		Aliases:              []string{"svm"},
		RequiredFeatureGates: []featuregate.Feature{kubefeatures.StorageVersionMigrator},
		RequiredControllers:  []string{names.GarbageCollectorController},
		ServiceAccount:       migratorName,
		New:                  newStorageVersionMigrator,
	}
}

// errNoGarbageCollector: the migrator walks the objects in the garbage
// collector's caches rather than listing them again. The manager does not
// start it when --controllers disables the collector, so this is the
// collector having failed to start (its own health check says why).
var errNoGarbageCollector = fmt.Errorf("storage version migrator requires garbage collector: it migrates the objects the collector caches, and %s did not start", garbageCollectorShortName)

// newStorageVersionMigrator builds the migrator for the manager, which runs
// it only with the StorageVersionMigrator feature gate on. It returns nil
// (nothing to run) when the API is not served or client-go's informers do
// not report resource versions, and an error without the garbage collector.
func newStorageVersionMigrator(ctx context.Context, c *controller.Context) (controller.Run, error) {
	logger := klog.FromContext(ctx)
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.InformerResourceVersion) {
		logger.V(2).Info("Controller not started: the InformerResourceVersion feature gate is off", "controller", migratorName)
		return nil, nil
	}
	if !clientgofeatures.FeatureGates().Enabled(clientgofeatures.InOrderInformers) {
		return nil, fmt.Errorf("%s: storage version migrator requires the InOrderInformers feature gate to be enabled", migratorName)
	}
	served, err := migrationAPIServed(c.RESTMapper)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	if !served {
		logger.V(2).Info("Controller not started: the API is not served", "controller", migratorName, "groupVersion", svmv1.SchemeGroupVersion)
		return nil, nil
	}
	if c.GraphBuilder == nil {
		return nil, fmt.Errorf("%s: %w", migratorName, errNoGarbageCollector)
	}

	config, err := c.ClientBuilder.Config(migratorName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	// Status updates go through a client with the usual limits. Built from
	// config: the client builder would look up the service account and
	// start a token source again.
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	migrationConfig := raiseMigrationLimits(config)
	crdClient, err := apiextensionsclientset.NewForConfig(migrationConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	dynamicClient, err := dynamic.NewForConfig(migrationConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(migrationConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}
	metadataClient, err := metadata.NewForConfig(migrationConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", migratorName, err)
	}

	migrations := c.InformerFactory.Storagemigration().V1().StorageVersionMigrations()
	// The three loops of kube-controller-manager's controller: one migrates
	// objects, one records the resource version a migration starts from,
	// one runs a resource's migrations one at a time and updates its CRD.
	loops := []func(context.Context){
		svm.NewSVMController(ctx, client, dynamicClient, migrations, migratorName, c.RESTMapper, c.GraphBuilder).Run,
		svm.NewResourceVersionController(ctx, client, discoveryClient, metadataClient, migrations, c.RESTMapper).Run,
		svm.NewCustomResourceController(ctx, client, migrations, crdClient.ApiextensionsV1().CustomResourceDefinitions()).Run,
	}
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, loop := range loops {
			wg.Go(func() { loop(ctx) })
		}
		wg.Wait()
	}, nil
}

// migrationAPIServed reports whether storagemigration.k8s.io/v1 is served
// (--runtime-config can turn it off).
func migrationAPIServed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.KindFor(svmv1.SchemeGroupVersion.WithResource("storageversionmigrations"))
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finding out whether %s is served: %w", svmv1.SchemeGroupVersion, err)
	}
	return true, nil
}

// raiseMigrationLimits returns a copy of config with the client-side rate
// limits multiplied as kube-controller-manager does. Unset limits are
// client-go's defaults, raised too; a negative QPS (unlimited, as the
// in-process loopback client is) stays unlimited.
func raiseMigrationLimits(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	if config.QPS == 0 {
		config.QPS = rest.DefaultQPS
	}
	if config.Burst == 0 {
		config.Burst = rest.DefaultBurst
	}
	config.QPS *= migrationQPSFactor
	config.Burst *= migrationBurstFactor
	return config
}
