// Package garbagecollector runs upstream's garbage collector
// (k8s.io/kubernetes/pkg/controller/garbagecollector) in-process: dependents
// of a deleted owner are deleted in the background, in the foreground or
// orphaned, as the delete's propagation policy says, for built-in and custom
// resources alike.
package garbagecollector

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name = "garbagecollector"
	// identity is the service account the controller acts as; the bootstrap
	// policy grants system:controller:generic-garbage-collector to it.
	identity = "generic-garbage-collector"
	// discoverySyncPeriod is how often the collector looks for new resources
	// (e.g. of a CRD created after start), and how long each such resync
	// waits for the new monitors to sync. kube-controller-manager uses 30 s,
	// so dependents of a new CRD's objects could wait that long; in-process,
	// aggregated discovery is two cheap requests, and the collector only
	// restarts its monitors when the set of resources changed.
	discoverySyncPeriod = 5 * time.Second
	// initialSyncTimeout is how long the collector waits for its monitors
	// to sync before its workers start anyway: what kube-controller-manager
	// passes to Run.
	initialSyncTimeout = 30 * time.Second
)

// New builds the garbage collector; run the returned function to start it.
func New(ctx context.Context, c *controller.Context, workers int) (func(context.Context), error) {
	config, err := c.ClientBuilder.Config(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// Deletes of many dependents come in bursts; do not throttle them
	// client-side (API priority and fairness protects the server).
	config.QPS = -1
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, metadataClient, c.RESTMapper,
		garbagecollector.DefaultIgnoredResources(), c.ObjectOrMetadataInformerFactory, c.InformersStarted)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// Controllers built after this one read the collector's caches.
	c.GraphBuilder = gc.GetDependencyGraphBuilder()
	return func(ctx context.Context) {
		go gc.Sync(ctx, client.Discovery(), discoverySyncPeriod)
		gc.Run(ctx, workers, initialSyncTimeout)
	}, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"garbage-collector-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c, c.Settings.ConcurrentGCSyncs)
		},
	}
}
