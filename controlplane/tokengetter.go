package controlplane

import (
	"context"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	v1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// serviceAccountGetter is what the service-account token authenticator
// reads service accounts and their legacy token secrets from: the informers'
// listers, and, for one they do not hold yet, the API itself, as
// kube-apiserver's getter does (k8s.io/kubernetes/pkg/controller/
// serviceaccount.NewGetterFromClient). Upstream's generic sample reads the
// listers alone (genericTokenGetter), so the first request with a token of a
// service account created a moment before (each controller's, at every
// first start) fails with "serviceaccount not found" and is logged as an
// error until the informer catches up. Pods, nodes and webhook
// configurations, which tokens of the generic control plane are never bound
// to, are never found, as in upstream's sample.
type serviceAccountGetter struct {
	serviceAccounts v1listers.ServiceAccountLister
	secrets         v1listers.SecretLister
	// client reads what the listers do not hold; empty until the loopback
	// client exists (newAPIsConfig), and the listers alone answer then.
	client *lateClient
}

// lateClient is a client that exists only once the configuration that the
// getter is part of has been built.
type lateClient struct{ v atomic.Value }

func (c *lateClient) set(client kubernetes.Interface) { c.v.Store(&client) }

func (c *lateClient) get() kubernetes.Interface {
	if client, ok := c.v.Load().(*kubernetes.Interface); ok {
		return *client
	}
	return nil
}

// newServiceAccountGetter returns the token getter of
// ServiceAccountAuthenticationOptions.OptionalTokenGetter, whose fallback
// reads through client once it is set.
func newServiceAccountGetter(client *lateClient) func(informers.SharedInformerFactory) serviceaccount.ServiceAccountTokenGetter {
	return func(f informers.SharedInformerFactory) serviceaccount.ServiceAccountTokenGetter {
		return serviceAccountGetter{serviceAccounts: f.Core().V1().ServiceAccounts().Lister(), secrets: f.Core().V1().Secrets().Lister(), client: client}
	}
}

func (g serviceAccountGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := g.serviceAccounts.ServiceAccounts(namespace).Get(name)
	if err == nil {
		return sa, nil
	}
	if client := g.client.get(); client != nil {
		return client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return nil, err
}

func (g serviceAccountGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	secret, err := g.secrets.Secrets(namespace).Get(name)
	if err == nil {
		return secret, nil
	}
	if client := g.client.get(); client != nil {
		return client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return nil, err
}

func (serviceAccountGetter) GetPod(_ context.Context, _, name string) (*corev1.Pod, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (serviceAccountGetter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

func (serviceAccountGetter) GetValidatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("validatingwebhookconfigurations"), name)
}

func (serviceAccountGetter) GetMutatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), name)
}
