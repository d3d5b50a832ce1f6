package generic

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	rootCACertPublisherShortName = "root-ca-cert-publisher"
	rootCACertPublisherIdentity  = "root-ca-cert-publisher"
	rootCACertPublisherWorkers   = 1
)

// RootCACertPublisherDescriptor is upstream's root CA publisher
// (k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher):
// every namespace gets the ConfigMap kube-root-ca.crt holding the CA that
// verifies the API server, so workloads and tools there can trust it.
func RootCACertPublisherDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.RootCACertificatePublisherController,
		Aliases:        []string{rootCACertPublisherShortName},
		ReportedName:   rootCACertPublisherShortName,
		ServiceAccount: rootCACertPublisherIdentity,
		New:            newRootCACertPublisher,
	}
}

func newRootCACertPublisher(_ context.Context, c *controller.Context) (controller.Run, error) {
	if len(c.RootCA) == 0 {
		return nil, errors.New(rootCACertPublisherShortName + ": no root CA to publish")
	}
	client, err := c.ClientBuilder.Client(rootCACertPublisherIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rootCACertPublisherShortName, err)
	}
	publisher, err := rootcacertpublisher.NewPublisher(c.InformerFactory.Core().V1().ConfigMaps(), c.InformerFactory.Core().V1().Namespaces(), client, c.RootCA)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rootCACertPublisherShortName, err)
	}
	return func(ctx context.Context) { publisher.Run(ctx, rootCACertPublisherWorkers) }, nil
}
