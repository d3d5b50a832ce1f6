// Package csrcleaner runs upstream's CSR cleaner
// (k8s.io/kubernetes/pkg/controller/certificates/cleaner): issued, denied,
// failed and long-pending CertificateSigningRequests are deleted after their
// retention period instead of piling up.
package csrcleaner

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/pkg/controller/certificates/cleaner"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "csrcleaner"
	identity = "certificate-controller"
	workers  = 1 // as kube-controller-manager
)

// New builds the cleaner; run the returned function to start it.
func New(_ context.Context, c *controller.Context) (func(context.Context), error) {
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	cc := cleaner.NewCSRCleanerController(client.CertificatesV1().CertificateSigningRequests(),
		c.InformerFactory.Certificates().V1().CertificateSigningRequests())
	return func(ctx context.Context) { cc.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"certificatesigningrequest-cleaner-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}
