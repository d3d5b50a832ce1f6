package generic

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	namespaceShortName = "namespace"
	namespaceIdentity  = "namespace-controller"
	// namespaceResyncPeriod re-examines every namespace, as
	// kube-controller-manager does.
	namespaceResyncPeriod = 5 * time.Minute
)

// NamespaceDescriptor is upstream's namespace controller
// (k8s.io/kubernetes/pkg/controller/namespace): a deleted namespace is
// emptied of every resource, custom resources included, and then removed,
// instead of staying Terminating forever.
func NamespaceDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.NamespaceController,
		Aliases:        []string{namespaceShortName},
		ReportedName:   namespaceShortName,
		ServiceAccount: namespaceIdentity,
		New:            newNamespaceController,
	}
}

// newNamespaceController builds the controller with
// --concurrent-namespace-syncs workers.
func newNamespaceController(ctx context.Context, c *controller.Context) (controller.Run, error) {
	config, err := c.ClientBuilder.Config(namespaceIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", namespaceShortName, err)
	}
	// Emptying a namespace is a burst of deletes; kube-controller-manager
	// raises this client's limits for the same reason.
	config.QPS = -1
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", namespaceShortName, err)
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", namespaceShortName, err)
	}
	discover, err := controller.DiscoveryAfterFirstSuccess(ctx, client.Discovery().ServerPreferredNamespacedResources)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", namespaceShortName, err)
	}
	nc := namespacecontroller.NewNamespaceController(ctx, client, metadataClient, discover,
		c.InformerFactory.Core().V1().Namespaces(), namespaceResyncPeriod, v1.FinalizerKubernetes)
	workers := c.Settings.ConcurrentNamespaceSyncs
	return func(ctx context.Context) { nc.Run(ctx, workers) }, nil
}
