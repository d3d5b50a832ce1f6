// Package serviceaccounttoken runs upstream's tokens controller
// (k8s.io/kubernetes/pkg/controller/serviceaccount): a Secret of type
// kubernetes.io/service-account-token is filled with a long-lived token for
// its service account, the CA and the namespace, for tools that still use
// such secrets.
package serviceaccounttoken

import (
	"context"
	"crypto"
	"fmt"

	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name    = "serviceaccount-token"
	workers = 5 // as kube-controller-manager
)

// New builds the controller, which signs tokens with the private key in
// keyFile; without one it returns nil (nothing to run). Like kube-controller-manager's, it acts as the manager itself:
// it writes token secrets for every service account.
func New(ctx context.Context, c *controller.Context, keyFile string) (func(context.Context), error) {
	if keyFile == "" {
		// Tokens are signed elsewhere (--service-account-signing-endpoint).
		klog.FromContext(ctx).Info("No --service-account-private-key-file; legacy token secrets are not filled", "controller", Name)
		return nil, nil
	}
	keyAny, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: reading --service-account-private-key-file: %w", Name, err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: the key in %s cannot sign", Name, keyFile)
	}
	generator, err := serviceaccount.JWTTokenGenerator(serviceaccount.LegacyIssuer, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	controller, err := sacontroller.NewTokensController(klog.FromContext(ctx),
		c.InformerFactory.Core().V1().ServiceAccounts(), c.InformerFactory.Core().V1().Secrets(),
		c.RootClient, sacontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: c.RootCA})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) { controller.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:    Name,
		Aliases: []string{"serviceaccount-token-controller"},
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c, c.Settings.ServiceAccountKeyFile)
		},
	}
}
