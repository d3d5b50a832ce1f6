package generic

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/certificates/cleaner"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	csrCleanerShortName = "csrcleaner"
	csrCleanerWorkers   = 1 // as kube-controller-manager
)

// CSRCleanerDescriptor is upstream's CSR cleaner
// (k8s.io/kubernetes/pkg/controller/certificates/cleaner): issued, denied,
// failed and long-pending CertificateSigningRequests are deleted after
// their retention period instead of piling up.
func CSRCleanerDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.CertificateSigningRequestCleanerController,
		Aliases:        []string{csrCleanerShortName},
		ReportedName:   csrCleanerShortName,
		ServiceAccount: certificateIdentity,
		New:            newCSRCleanerController,
	}
}

func newCSRCleanerController(_ context.Context, c *controller.Context) (controller.Run, error) {
	client, err := c.ClientBuilder.Client(certificateIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", csrCleanerShortName, err)
	}
	cc := cleaner.NewCSRCleanerController(client.CertificatesV1().CertificateSigningRequests(),
		c.InformerFactory.Certificates().V1().CertificateSigningRequests())
	return func(ctx context.Context) { cc.Run(ctx, csrCleanerWorkers) }, nil
}
