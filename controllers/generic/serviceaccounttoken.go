package generic

import (
	"context"
	"crypto"
	"fmt"

	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	serviceAccountTokenShortName = "serviceaccount-token"
	serviceAccountTokenWorkers   = 5 // as kube-controller-manager
)

// ServiceAccountTokenDescriptor is upstream's tokens controller
// (k8s.io/kubernetes/pkg/controller/serviceaccount): a Secret of type
// kubernetes.io/service-account-token is filled with a long-lived token for
// its service account, the CA and the namespace, for tools that still use
// such secrets. Like kube-controller-manager's, it acts as the manager
// itself (no ServiceAccount): it writes token secrets for every service
// account.
func ServiceAccountTokenDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:         names.ServiceAccountTokenController,
		Aliases:      []string{serviceAccountTokenShortName},
		ReportedName: serviceAccountTokenShortName,
		New:          newServiceAccountTokenController,
	}
}

// newServiceAccountTokenController builds the controller, which signs
// tokens with the private key in --service-account-private-key-file;
// without one it returns nil (nothing to run).
func newServiceAccountTokenController(ctx context.Context, c *controller.Context) (controller.Run, error) {
	keyFile := c.Settings.ServiceAccountKeyFile
	if keyFile == "" {
		// Tokens are signed elsewhere (--service-account-signing-endpoint).
		klog.FromContext(ctx).Info("No --service-account-private-key-file; legacy token secrets are not filled", "controller", serviceAccountTokenShortName)
		return nil, nil
	}
	keyAny, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: reading --service-account-private-key-file: %w", serviceAccountTokenShortName, err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: the key in %s cannot sign", serviceAccountTokenShortName, keyFile)
	}
	generator, err := serviceaccount.JWTTokenGenerator(serviceaccount.LegacyIssuer, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", serviceAccountTokenShortName, err)
	}
	tc, err := sacontroller.NewTokensController(klog.FromContext(ctx),
		c.InformerFactory.Core().V1().ServiceAccounts(), c.InformerFactory.Core().V1().Secrets(),
		c.RootClient, sacontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: c.RootCA})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", serviceAccountTokenShortName, err)
	}
	return func(ctx context.Context) { tc.Run(ctx, serviceAccountTokenWorkers) }, nil
}
