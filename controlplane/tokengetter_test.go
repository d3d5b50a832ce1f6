package controlplane

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// A service account created a moment ago, which the informers have not
// seen yet, authenticates its first token: the getter reads it from the API
// (before, the first request of every controller at a first start failed
// and was logged as an error).
func TestServiceAccountGetterReadsWhatTheInformerLacks(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "namespace-controller"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "legacy-token"}}
	// The factory's informers are never started: their listers hold nothing.
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	var client lateClient
	getter := newServiceAccountGetter(&client)(factory)

	if _, err := getter.GetServiceAccount(t.Context(), sa.Namespace, sa.Name); !apierrors.IsNotFound(err) {
		t.Errorf("without a client, GetServiceAccount: %v; want the listers' NotFound", err)
	}

	client.set(fake.NewClientset(sa, secret))
	got, err := getter.GetServiceAccount(t.Context(), sa.Namespace, sa.Name)
	if err != nil || got.Name != sa.Name {
		t.Errorf("GetServiceAccount of one the informer lacks: %v, %v; want it read from the API", got, err)
	}
	if got, err := getter.GetSecret(t.Context(), secret.Namespace, secret.Name); err != nil || got.Name != secret.Name {
		t.Errorf("GetSecret of one the informer lacks: %v, %v; want it read from the API", got, err)
	}
	if _, err := getter.GetPod(t.Context(), "default", "p"); !apierrors.IsNotFound(err) {
		t.Errorf("GetPod: %v; want NotFound: the generic control plane has no pods", err)
	}
}
