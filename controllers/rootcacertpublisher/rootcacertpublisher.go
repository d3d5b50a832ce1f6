// Package rootcacertpublisher runs upstream's root CA publisher
// (k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher): every
// namespace gets the ConfigMap kube-root-ca.crt holding the CA that verifies
// the API server, so workloads and tools there can trust it.
package rootcacertpublisher

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "root-ca-cert-publisher"
	identity = "root-ca-cert-publisher"
	workers  = 1
)

// New builds the controller; run the returned function to start it.
func New(_ context.Context, c *controller.Context) (func(context.Context), error) {
	if len(c.RootCA) == 0 {
		return nil, errors.New(Name + ": no root CA to publish")
	}
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	publisher, err := rootcacertpublisher.NewPublisher(c.InformerFactory.Core().V1().ConfigMaps(), c.InformerFactory.Core().V1().Namespaces(), client, c.RootCA)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) { publisher.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"root-ca-certificate-publisher-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}
