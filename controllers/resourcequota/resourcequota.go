// Package resourcequota runs upstream's resource quota controller
// (k8s.io/kubernetes/pkg/controller/resourcequota) with object-count
// evaluation only: quotas such as count/configmaps, count/secrets or
// count/widgets.example.com (custom resources) get their usage calculated,
// which the ResourceQuota admission plugin enforces. kube-controller-manager
// adds evaluators for pods, services and persistent volume claims; here their
// informers would fail forever against APIs this control plane does not serve.
package resourcequota

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/kubernetes/pkg/controller"
	resourcequotacontroller "k8s.io/kubernetes/pkg/controller/resourcequota"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controllercontext"
)

const (
	// Name selects the controller in --controllers.
	Name     = "resourcequota"
	identity = "resourcequota-controller"
	// quotaSyncPeriod recalculates every quota. Upstream's monitors ignore
	// add events (admission charges them), so a quota on a resource that
	// was discovered after the quota was first synced (a CRD created a
	// moment before) gets its usage only at this resync, and admission
	// refuses such objects until then. kube-controller-manager waits 5 min;
	// usage is computed from in-memory caches, so 30 s is cheap here.
	quotaSyncPeriod = 30 * time.Second
	// discoverySyncPeriod is how often Sync looks for resources of CRDs
	// created after start, and how long each resync that found new ones
	// waits for their monitors to sync (the workers pause meanwhile).
	// kube-controller-manager uses 30 s. Run takes no timeout: it waits for
	// the quota informer until ctx ends, as upstream's does.
	discoverySyncPeriod = 5 * time.Second
)

// New builds the controller; run the returned function to start it.
func New(ctx context.Context, c *controllercontext.Context, workers int) (func(context.Context), error) {
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	discover := client.Discovery().ServerPreferredNamespacedResources
	// No evaluators: the controller adds an object-count evaluator for
	// each resource it discovers.
	config := generic.NewConfiguration(nil, quotainstall.DefaultIgnoredResources())
	rq, err := resourcequotacontroller.NewController(ctx, &resourcequotacontroller.ControllerOptions{
		QuotaClient:               client.CoreV1(),
		ResourceQuotaInformer:     c.InformerFactory.Core().V1().ResourceQuotas(),
		ResyncPeriod:              controller.StaticResyncPeriodFunc(quotaSyncPeriod),
		Registry:                  generic.NewRegistry(config.Evaluators()),
		DiscoveryFunc:             discover,
		IgnoredResourcesFunc:      config.IgnoredResources,
		InformersStarted:          c.InformersStarted,
		InformerFactory:           c.ObjectOrMetadataInformerFactory,
		ReplenishmentResyncPeriod: controller.StaticResyncPeriodFunc(12 * time.Hour),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) {
		go rq.Sync(ctx, discover, discoverySyncPeriod)
		rq.Run(ctx, workers)
	}, nil
}
