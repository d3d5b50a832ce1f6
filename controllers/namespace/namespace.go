// Package namespace runs upstream's namespace controller
// (k8s.io/kubernetes/pkg/controller/namespace) in-process: a deleted
// namespace is emptied of every resource, custom resources included, and then
// removed, instead of staying Terminating forever.
package namespace

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name = "namespace"
	// identity is the service account the controller acts as.
	identity = "namespace-controller"
	// resyncPeriod re-examines every namespace, as kube-controller-manager does.
	resyncPeriod = 5 * time.Minute
)

// New builds the namespace controller; run the returned function to start it.
func New(ctx context.Context, c *controller.Context, workers int) (func(context.Context), error) {
	config, err := c.ClientBuilder.Config(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// Emptying a namespace is a burst of deletes; kube-controller-manager
	// raises this client's limits for the same reason.
	config.QPS = -1
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	discover, err := controller.DiscoveryAfterFirstSuccess(ctx, client.Discovery().ServerPreferredNamespacedResources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	controller := namespacecontroller.NewNamespaceController(ctx, client, metadataClient, discover,
		c.InformerFactory.Core().V1().Namespaces(), resyncPeriod, v1.FinalizerKubernetes)
	return func(ctx context.Context) { controller.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"namespace-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c, c.Settings.ConcurrentNamespaceSyncs)
		},
	}
}
