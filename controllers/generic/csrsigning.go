package generic

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/certificates/signer"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	csrSigningShortName = "csrsigning"
	// certificateIdentity is the service account of the CSR signer and
	// cleaner, as in kube-controller-manager.
	certificateIdentity = "certificate-controller"
	csrSigningWorkers   = 5 // as kube-controller-manager
)

// CSRSigningDescriptor is upstream's CSR signer
// (k8s.io/kubernetes/pkg/controller/certificates/signer) for the
// kubernetes.io/kube-apiserver-client signer: once a person's
// CertificateSigningRequest is approved (kubectl certificate approve), it
// is signed by the cluster CA and the certificate authenticates to the API.
func CSRSigningDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.CertificateSigningRequestSigningController,
		Aliases:        []string{csrSigningShortName},
		ReportedName:   csrSigningShortName,
		ServiceAccount: certificateIdentity,
		New:            newCSRSigningController,
	}
}

// newCSRSigningController builds the signer from the CA in
// --cluster-signing-cert-file and --cluster-signing-key-file; certificates
// it issues are valid for --cluster-signing-duration. Without a CA it
// returns nil (nothing to run).
func newCSRSigningController(ctx context.Context, c *controller.Context) (controller.Run, error) {
	certFile, keyFile := c.Settings.ClusterSigningCertFile, c.Settings.ClusterSigningKeyFile
	if certFile == "" || keyFile == "" {
		klog.FromContext(ctx).Info("No --cluster-signing-cert-file and --cluster-signing-key-file; CSRs are not signed", "controller", csrSigningShortName)
		return nil, nil
	}
	client, err := c.ClientBuilder.Client(certificateIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", csrSigningShortName, err)
	}
	s, err := signer.NewKubeAPIServerClientCSRSigningController(ctx, client,
		c.InformerFactory.Certificates().V1().CertificateSigningRequests(), certFile, keyFile, c.Settings.ClusterSigningDuration)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", csrSigningShortName, err)
	}
	return func(ctx context.Context) { s.Run(ctx, csrSigningWorkers) }, nil
}
