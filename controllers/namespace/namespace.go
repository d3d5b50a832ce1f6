// Package namespace runs upstream's namespace controller
// (k8s.io/kubernetes/pkg/controller/namespace) in-process: a deleted
// namespace is emptied of every resource, custom resources included, and then
// removed, instead of staying Terminating forever.
package namespace

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
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

// discoveryAfterFirstSuccess retries discover until it returns resources (or
// ctx ends) and returns a discovery function whose first call answers with
// that result. Upstream's controller calls discovery once while it is built
// and exits the process (klog.FlushAndExit) when that returns nothing; in a
// control plane that also serves the API, a passing discovery hiccup must
// not take everything down.
func discoveryAfterFirstSuccess(ctx context.Context, discover func() ([]*metav1.APIResourceList, error)) (func() ([]*metav1.APIResourceList, error), error) {
	var first []*metav1.APIResourceList
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		resources, err := discover()
		if len(resources) == 0 {
			klog.FromContext(ctx).V(1).Info("Namespaced resources not discovered yet", "err", err)
			return false, nil
		}
		first = resources
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("discovering namespaced resources: %w", err)
	}
	var used atomic.Bool
	return func() ([]*metav1.APIResourceList, error) {
		if used.CompareAndSwap(false, true) {
			return first, nil
		}
		return discover()
	}, nil
}

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
	discover, err := discoveryAfterFirstSuccess(ctx, client.Discovery().ServerPreferredNamespacedResources)
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
