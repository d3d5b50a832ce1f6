// Package serviceaccount runs upstream's service account controller
// (k8s.io/kubernetes/pkg/controller/serviceaccount): every namespace gets
// its "default" service account.
package serviceaccount

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "serviceaccount"
	identity = "service-account-controller"
	workers  = 1 // as kube-controller-manager
)

// New builds the controller; run the returned function to start it.
func New(ctx context.Context, c *controller.Context) (func(context.Context), error) {
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	controller, err := sacontroller.NewServiceAccountsController(klog.FromContext(ctx),
		c.InformerFactory.Core().V1().ServiceAccounts(), c.InformerFactory.Core().V1().Namespaces(),
		client, sacontroller.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) { controller.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"serviceaccount-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}
