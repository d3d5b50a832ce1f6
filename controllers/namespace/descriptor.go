package namespace

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/namespace/deletion"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	shortName = "namespace"
	identity  = "namespace-controller"
	// resyncPeriod re-examines every namespace, as kube-controller-manager
	// does.
	resyncPeriod = 5 * time.Minute
)

// Descriptor registers the controller with the manager, under
// kube-controller-manager's name for its namespace controller.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.NamespaceController,
		Aliases:        []string{shortName},
		ReportedName:   shortName,
		ServiceAccount: identity,
		New:            New,
	}
}

// New builds the controller with --concurrent-namespace-syncs workers and
// --namespace-deletion-grace-period.
func New(ctx context.Context, c *controller.Context) (controller.Run, error) {
	config, err := c.ClientBuilder.Config(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	// Emptying a namespace is a burst of deletes; kube-controller-manager
	// raises this client's limits for the same reason.
	config.QPS = -1
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	discover, err := controller.DiscoveryAfterFirstSuccess(ctx, client.Discovery().ServerPreferredNamespacedResources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	deleter := deletion.NewNamespacedResourcesDeleter(ctx, client.CoreV1().Namespaces(), metadataClient, client.CoreV1(), discover, v1.FinalizerKubernetes)
	nc, err := NewController(c.InformerFactory.Core().V1().Namespaces(), deleter, c.Settings.NamespaceDeletionGracePeriod, resyncPeriod)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shortName, err)
	}
	workers := c.Settings.ConcurrentNamespaceSyncs
	return func(ctx context.Context) { nc.Run(ctx, workers) }, nil
}
