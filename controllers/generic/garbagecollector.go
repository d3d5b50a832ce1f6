package generic

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	garbageCollectorShortName = "garbagecollector"
	// garbageCollectorIdentity is the service account the collector acts
	// as; the bootstrap policy grants system:controller:generic-garbage-collector to it.
	garbageCollectorIdentity = "generic-garbage-collector"
	// garbageCollectorDiscoveryPeriod is how often the collector looks for
	// new resources (e.g. of a CRD created after start), and how long each
	// such resync waits for the new monitors to sync.
	// kube-controller-manager uses 30 s, so dependents of a new CRD's
	// objects could wait that long; in-process, aggregated discovery is two
	// cheap requests, and the collector only restarts its monitors when the
	// set of resources changed.
	garbageCollectorDiscoveryPeriod = 5 * time.Second
	// garbageCollectorInitialSyncTimeout is how long the collector waits
	// for its monitors to sync before its workers start anyway: what
	// kube-controller-manager passes to Run.
	garbageCollectorInitialSyncTimeout = 30 * time.Second
)

// GarbageCollectorDescriptor is upstream's garbage collector
// (k8s.io/kubernetes/pkg/controller/garbagecollector): dependents of a
// deleted owner are deleted in the background, in the foreground or
// orphaned, as the delete's propagation policy says, for built-in and
// custom resources alike.
func GarbageCollectorDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.GarbageCollectorController,
		Aliases:        []string{garbageCollectorShortName},
		ReportedName:   garbageCollectorShortName,
		ServiceAccount: garbageCollectorIdentity,
		New:            newGarbageCollector,
	}
}

// newGarbageCollector builds the collector with --concurrent-gc-syncs workers.
func newGarbageCollector(ctx context.Context, c *controller.Context) (controller.Run, error) {
	config, err := c.ClientBuilder.Config(garbageCollectorIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", garbageCollectorShortName, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", garbageCollectorShortName, err)
	}
	// Deletes of many dependents come in bursts; do not throttle them
	// client-side (API priority and fairness protects the server).
	config.QPS = -1
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", garbageCollectorShortName, err)
	}
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, metadataClient, c.RESTMapper,
		garbagecollector.DefaultIgnoredResources(), c.ObjectOrMetadataInformerFactory, c.InformersStarted)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", garbageCollectorShortName, err)
	}
	// Controllers built after this one read the collector's caches.
	c.GraphBuilder = gc.GetDependencyGraphBuilder()
	workers := c.Settings.ConcurrentGCSyncs
	return func(ctx context.Context) {
		go gc.Sync(ctx, client.Discovery(), garbageCollectorDiscoveryPeriod)
		gc.Run(ctx, workers, garbageCollectorInitialSyncTimeout)
	}, nil
}
