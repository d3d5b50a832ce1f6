package testenv

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

// webhookServer is a suite's webhook server written with net/http: it
// refuses ConfigMaps labelled refuse=true. It counts the requests it
// answered.
type webhookServer struct {
	calls atomic.Int32
}

// serve serves at the host and port of o, with its certificate, until the
// test ends.
func (h *webhookServer) serve(t *testing.T, o *install.WebhookOptions) {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(o.LocalServingCertDir, install.CertFile), filepath.Join(o.LocalServingCertDir, install.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := tls.Listen("tcp", net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort)), &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: http.HandlerFunc(h.validate)}
	go server.Serve(listener) //nolint:errcheck // ErrServerClosed at Close
	t.Cleanup(func() { _ = server.Close() })
}

func (h *webhookServer) validate(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an AdmissionReview", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Result: &metav1.Status{Code: http.StatusForbidden, Message: "refused by the test's webhook"}}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

// The launcher installs webhooks as controlplane/testing does (its tests
// cover mutating and conversion webhooks too): in effect when Start
// returns, and, restarted with the Webhooks of the server before, at the
// same port with the same CA, though Stop removed the certificate
// directory with the work dir.
func TestWebhooksInEffectWhenStartReturns(t *testing.T) {
	t.Parallel()
	refuse := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "refuse.webhooks.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhooks", Path: ptr.To("/validate")}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"refuse": "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	dataDir := t.TempDir()
	refused := func(t *testing.T, s *TestServer, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"refuse": "true"}}}
		_, err := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "refused by the test's webhook") {
			t.Errorf("the first labelled ConfigMap after Start: %v, want it refused by the validating webhook", err)
		}
	}

	first := StartTestServer(t, Options{DataDir: dataDir, Webhooks: &install.WebhookOptions{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{refuse}}})
	h := &webhookServer{}
	h.serve(t, first.Webhooks)
	refused(t, first, "first")
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	// The webhook server goes on serving with what it read at first.
	second := StartTestServer(t, Options{DataDir: dataDir, Webhooks: first.Webhooks})
	if second.Webhooks.LocalServingPort != first.Webhooks.LocalServingPort || string(second.Webhooks.LocalServingCAData) != string(first.Webhooks.LocalServingCAData) {
		t.Errorf("restarted with the Webhooks of the server before: port %d (was %d), or another CA", second.Webhooks.LocalServingPort, first.Webhooks.LocalServingPort)
	}
	if second.Webhooks.LocalServingCertDir == first.Webhooks.LocalServingCertDir {
		t.Errorf("the certificate directory of the first server, which its Stop removed, is the second's too")
	}
	refused(t, second, "second")
	if h.calls.Load() != 2 {
		t.Errorf("the webhook server was called %d times, want once per server", h.calls.Load())
	}
}
