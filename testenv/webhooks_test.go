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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

// webhookServer is a suite's webhook server written with net/http: it
// refuses ConfigMaps labelled refuse=true and converts Paints between v1's
// spec.colour and v2's spec.color (install/testdata/conversion). It counts
// the requests it answered.
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
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", h.validate)
	mux.HandleFunc("/convert", h.convert)
	server := &http.Server{Handler: mux}
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

func (h *webhookServer) convert(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want a ConversionReview", http.StatusBadRequest)
		return
	}
	field := map[string]string{"conversion.example.com/v1": "colour", "conversion.example.com/v2": "color"}
	response := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		colour, _, _ := unstructured.NestedString(obj.Object, "spec", field[obj.GetAPIVersion()])
		obj.Object["spec"] = map[string]any{field[review.Request.DesiredAPIVersion]: colour}
		obj.SetAPIVersion(review.Request.DesiredAPIVersion)
		response.ConvertedObjects = append(response.ConvertedObjects, runtimeRaw(obj))
	}
	review.Request, review.Response = nil, response
	_ = json.NewEncoder(w).Encode(review)
}

func runtimeRaw(obj unstructured.Unstructured) (raw runtime.RawExtension) {
	raw.Raw, _ = obj.MarshalJSON()
	return raw
}

// The launcher installs webhooks as controlplane/testing does (its tests
// cover each kind): in effect when Start returns, and, restarted with the
// Webhooks of the server before, at the same port with the same CA, though
// Stop removed the certificate directory with the work dir.
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
	paints := func(version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "conversion.example.com", Version: version, Resource: "paints"}
	}
	refused := func(t *testing.T, s *TestServer, name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"refuse": "true"}}}
		_, err := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "refused by the test's webhook") {
			t.Errorf("the first labelled ConfigMap after Start: %v, want it refused by the validating webhook", err)
		}
	}

	first := StartTestServer(t, Options{DataDir: dataDir, CRDPaths: []string{"install/testdata/conversion"}, Webhooks: &install.WebhookOptions{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{refuse}}})
	h := &webhookServer{}
	h.serve(t, first.Webhooks)
	refused(t, first, "first")
	paint := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conversion.example.com/v1", "kind": "Paint", "metadata": map[string]any{"name": "red"}, "spec": map[string]any{"colour": "red"}}}
	if _, err := dynamic.NewForConfigOrDie(first.ClientConfig).Resource(paints("v1")).Namespace("default").Create(t.Context(), paint, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Paint in v1, stored in v2 by the conversion webhook: %v", err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	// The webhook server goes on serving with what it read at first.
	second := StartTestServer(t, Options{DataDir: dataDir, CRDPaths: []string{"install/testdata/conversion"}, Webhooks: first.Webhooks})
	if second.Webhooks.LocalServingPort != first.Webhooks.LocalServingPort || string(second.Webhooks.LocalServingCAData) != string(first.Webhooks.LocalServingCAData) {
		t.Errorf("restarted with the Webhooks of the server before: port %d (was %d), or another CA", second.Webhooks.LocalServingPort, first.Webhooks.LocalServingPort)
	}
	refused(t, second, "second")
	got, err := dynamic.NewForConfigOrDie(second.ClientConfig).Resource(paints("v2")).Namespace("default").Get(t.Context(), "red", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "red" {
		t.Errorf("the Paint in v2: spec %v, want color red", got.Object["spec"])
	}
	if h.calls.Load() == 0 {
		t.Error("the webhook server was never called")
	}
}
