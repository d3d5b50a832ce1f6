// Package resourcequota runs upstream's resource quota controller
// (k8s.io/kubernetes/pkg/controller/resourcequota) with the evaluators of
// the resources a generic control plane serves, the same ones the
// ResourceQuota admission plugin enforces (NewConfiguration): object counts
// under their legacy and count/ names, and count/<resource>.<group> for
// custom resources. kube-controller-manager adds evaluators for pods,
// services and persistent volume claims; here their informers would fail
// forever against APIs this control plane does not serve.
package resourcequota

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	kubecontroller "k8s.io/kubernetes/pkg/controller"
	resourcequotacontroller "k8s.io/kubernetes/pkg/controller/resourcequota"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// shortName is the controller's name before it took
	// kube-controller-manager's: an alias, and the name the manager reports
	// it under.
	shortName = "resourcequota"
	identity  = "resourcequota-controller"
	// discoverySyncPeriod is how often Sync looks for resources of CRDs
	// created after start, and how long each resync that found new ones
	// waits for their monitors to sync (the workers pause meanwhile).
	// kube-controller-manager uses 30 s; until a resource is monitored,
	// deleting one of its objects is noticed only at the next full resync.
	// Run takes no timeout: it waits for the quota informer until ctx
	// ends, as upstream's does.
	discoverySyncPeriod = 5 * time.Second
)

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.ResourceQuotaController,
		Aliases:        []string{shortName},
		ReportedName:   shortName,
		ServiceAccount: identity,
		New:            New,
	}
}

// New builds the controller with --concurrent-resource-quota-syncs
// workers. Every quota is recalculated in full each
// --resource-quota-sync-period: events (quota changes, deletions of what it
// counts) recalculate it at once, and admission charges creations.
func New(ctx context.Context, c *controller.Context) (controller.Run, error) {
	config, err := c.ClientBuilder.Config(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	// One config for both clients: the client builder would look up the
	// service account and start a token source for each.
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	quotaConfig, err := NewConfiguration(generic.ListerFuncForResourceFunc(c.ObjectOrMetadataInformerFactory.ForResource))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	discover, err := controller.DiscoveryAfterFirstSuccess(ctx, client.Discovery().ServerPreferredNamespacedResources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	rq, err := resourcequotacontroller.NewController(ctx, &resourcequotacontroller.ControllerOptions{
		QuotaClient:               client.CoreV1(),
		ResourceQuotaInformer:     c.InformerFactory.Core().V1().ResourceQuotas(),
		ResyncPeriod:              kubecontroller.StaticResyncPeriodFunc(c.Settings.ResourceQuotaSyncPeriod),
		Registry:                  newRegistry(quotaConfig.Evaluators(), quotaConfig.IgnoredResources(), c.RESTMapper, metadataClient),
		DiscoveryFunc:             discover,
		IgnoredResourcesFunc:      quotaConfig.IgnoredResources,
		InformersStarted:          c.InformersStarted,
		InformerFactory:           c.ObjectOrMetadataInformerFactory,
		ReplenishmentResyncPeriod: kubecontroller.StaticResyncPeriodFunc(12 * time.Hour),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	workers := c.Settings.ConcurrentQuotaSyncs
	return func(ctx context.Context) {
		go rq.Sync(ctx, discover, discoverySyncPeriod)
		rq.Run(ctx, workers)
	}, nil
}
