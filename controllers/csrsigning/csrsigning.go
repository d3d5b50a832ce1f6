// Package csrsigning runs upstream's CSR signer
// (k8s.io/kubernetes/pkg/controller/certificates/signer) for the
// kubernetes.io/kube-apiserver-client signer: once a person's
// CertificateSigningRequest is approved (kubectl certificate approve), it is
// signed by the cluster CA and the certificate authenticates to the API.
package csrsigning

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/signer"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "csrsigning"
	identity = "certificate-controller"
	workers  = 5 // as kube-controller-manager
)

// New builds the signer from the CA in certFile and keyFile; certificates it
// issues are valid for ttl. Without a CA it returns nil (nothing to run).
func New(ctx context.Context, c *controller.Context, certFile, keyFile string, ttl time.Duration) (func(context.Context), error) {
	if certFile == "" || keyFile == "" {
		klog.FromContext(ctx).Info("No --cluster-signing-cert-file and --cluster-signing-key-file; CSRs are not signed", "controller", Name)
		return nil, nil
	}
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	s, err := signer.NewKubeAPIServerClientCSRSigningController(ctx, client,
		c.InformerFactory.Certificates().V1().CertificateSigningRequests(), certFile, keyFile, ttl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) { s.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"certificatesigningrequest-signing-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c, c.Settings.ClusterSigningCertFile, c.Settings.ClusterSigningKeyFile, c.Settings.ClusterSigningDuration)
		},
	}
}
