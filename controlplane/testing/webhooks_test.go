package testing

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
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

var (
	paintsV1 = schema.GroupVersionResource{Group: "conversion.example.com", Version: "v1", Resource: "paints"}
	paintsV2 = schema.GroupVersionResource{Group: "conversion.example.com", Version: "v2", Resource: "paints"}
)

// webhookTestLabel marks the ConfigMaps the test webhooks are called for.
const webhookTestLabel = "webhook-test"

// refusal is what the validating test webhook says.
const refusal = "the test webhook refuses the key forbidden"

// webhookOptions are configurations as a suite's manifests write them:
// service references with the paths its webhook server serves.
func webhookOptions() *install.WebhookOptions {
	service := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "system", Name: "webhook-service", Path: &path}}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{webhookTestLabel: "true"}}
	return &install.WebhookOptions{
		MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "test-mutating"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "label.webhooks.example.com", ClientConfig: service("/mutate"), Rules: rules, ObjectSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			}},
		}},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
			ObjectMeta: metav1.ObjectMeta{Name: "test-validating"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "refuse.webhooks.example.com", ClientConfig: service("/validate"), Rules: rules, ObjectSelector: selector,
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			}},
		}},
	}
}

// testWebhooks is a suite's webhook server written with net/http alone:
// it labels ConfigMaps mutated-by=webhook, refuses those with a key
// "forbidden", and converts Paints between v1's spec.colour and v2's
// spec.color. It counts its calls.
type testWebhooks struct {
	mutations, validations, conversions atomic.Int32
	server                              *http.Server
}

// serveTestWebhooks serves the test webhooks where o says, until the test
// ends or close is called.
func serveTestWebhooks(t *testing.T, o *install.WebhookOptions) *testWebhooks {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(o.LocalServingCertDir, install.CertFile), filepath.Join(o.LocalServingCertDir, install.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := tls.Listen("tcp", net.JoinHostPort(o.LocalServingHost, strconv.Itoa(o.LocalServingPort)), &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	h := &testWebhooks{}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate", h.admit(&h.mutations, func(*corev1.ConfigMap) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{
			Allowed:   true,
			PatchType: ptr.To(admissionv1.PatchTypeJSONPatch),
			Patch:     []byte(`[{"op":"add","path":"/metadata/labels/mutated-by","value":"webhook"}]`),
		}
	}))
	mux.HandleFunc("/validate", h.admit(&h.validations, func(cm *corev1.ConfigMap) *admissionv1.AdmissionResponse {
		if _, ok := cm.Data["forbidden"]; ok {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: refusal}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	mux.HandleFunc("/convert", h.convert)
	h.server = &http.Server{Handler: mux}
	go h.server.Serve(listener) //nolint:errcheck // ErrServerClosed at close
	t.Cleanup(h.close)
	return h
}

func (h *testWebhooks) close() {
	h.server.Close() //nolint:errcheck // the test is over
}

func (h *testWebhooks) admit(calls *atomic.Int32, decide func(*corev1.ConfigMap) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review admissionv1.AdmissionReview
		var cm corev1.ConfigMap
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "want an AdmissionReview", http.StatusBadRequest)
			return
		}
		if err := json.Unmarshal(review.Request.Object.Raw, &cm); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		review.Response = decide(&cm)
		review.Response.UID = review.Request.UID
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}
}

func (h *testWebhooks) convert(w http.ResponseWriter, r *http.Request) {
	h.conversions.Add(1)
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want a ConversionReview", http.StatusBadRequest)
		return
	}
	field := map[string]string{"conversion.example.com/v1": "colour", "conversion.example.com/v2": "color"}
	to := field[review.Request.DesiredAPIVersion]
	response := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		from := field[obj.GetAPIVersion()]
		if colour, found, _ := unstructured.NestedString(obj.Object, "spec", from); found {
			unstructured.RemoveNestedField(obj.Object, "spec", from)
			_ = unstructured.SetNestedField(obj.Object, colour, "spec", to)
		}
		obj.SetAPIVersion(review.Request.DesiredAPIVersion)
		data, err := obj.MarshalJSON()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		response.ConvertedObjects = append(response.ConvertedObjects, runtime.RawExtension{Raw: data})
	}
	review.Request, review.Response = nil, response
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

func testConfigMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{webhookTestLabel: "true"}}, Data: data}
}

func paint(version, name, field, colour string) *unstructured.Unstructured {
	p := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: colour}}}
	p.SetAPIVersion("conversion.example.com/" + version)
	p.SetKind("Paint")
	p.SetName(name)
	return p
}

// expectAdmission makes the first requests of a test after Start: each must
// be answered by h, the webhooks it serves in effect without a retry.
func expectAdmission(t *testing.T, s *TestServer, h *testWebhooks, prefix string) {
	t.Helper()
	configMaps := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().ConfigMaps("default")
	_, err := configMaps.Create(t.Context(), testConfigMap(prefix+"-refused", map[string]string{"forbidden": "yes"}), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), refusal) {
		t.Errorf("the first ConfigMap with a key forbidden: want it refused by the validating webhook, got %v", err)
	}
	cm, err := configMaps.Create(t.Context(), testConfigMap(prefix+"-labelled", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["mutated-by"] != "webhook" {
		t.Errorf("a ConfigMap created: labels %v, want mutated-by=webhook from the mutating webhook", cm.Labels)
	}
	if h.validations.Load() == 0 || h.mutations.Load() == 0 {
		t.Errorf("the webhook server was called %d times to validate and %d times to mutate; want both", h.validations.Load(), h.mutations.Load())
	}
}

func TestWebhooksInEffectAtStart(t *testing.T) {
	given := webhookOptions()
	s := StartTestServer(t, Options{CRDPaths: []string{"testdata/conversion"}, Webhooks: given})
	h := serveTestWebhooks(t, s.Webhooks)
	ctx := t.Context()

	expectAdmission(t, s, h, "start")

	// A Paint written in v1 is stored in v2: converted by the webhook.
	paints := dynamic.NewForConfigOrDie(s.ClientConfig)
	if _, err := paints.Resource(paintsV1).Namespace("default").Create(ctx, paint("v1", "red", "colour", "red"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Paint in v1: %v", err)
	}
	got, err := paints.Resource(paintsV2).Namespace("default").Get(ctx, "red", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "red" || h.conversions.Load() == 0 {
		t.Errorf("the Paint in v2: spec %v after %d conversions; want color red from the conversion webhook", got.Object["spec"], h.conversions.Load())
	}

	// The configurations as installed: the suite's webhooks alone (the
	// markers removed), at the local server, trusting its CA.
	admission := kubernetes.NewForConfigOrDie(s.ClientConfig).AdmissionregistrationV1()
	mutating, err := admission.MutatingWebhookConfigurations().Get(ctx, "test-mutating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	validating, err := admission.ValidatingWebhookConfigurations().Get(ctx, "test-validating", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://%s:%d", s.Webhooks.LocalServingHost, s.Webhooks.LocalServingPort)
	installed := map[string][]admissionregistrationv1.WebhookClientConfig{}
	for _, w := range mutating.Webhooks {
		installed["/mutate"] = append(installed["/mutate"], w.ClientConfig)
	}
	for _, w := range validating.Webhooks {
		installed["/validate"] = append(installed["/validate"], w.ClientConfig)
	}
	for _, path := range []string{"/mutate", "/validate"} {
		if ccs := installed[path]; len(ccs) != 1 || ptr.Deref(ccs[0].URL, "") != base+path || string(ccs[0].CABundle) != string(s.Webhooks.LocalServingCAData) {
			t.Errorf("the configuration of %s as installed: %+v; want one webhook at %s%s with the CA", path, ccs, base, path)
		}
	}
	// The options given are the caller's: left as they were.
	if given.MutatingWebhooks[0].Webhooks[0].ClientConfig.Service == nil || given.LocalServingPort != 0 {
		t.Errorf("Start changed the options it was given")
	}
}

// A restart on the same data dir finds the configurations and the CRD of
// the run before, pointed at its webhook server, with its CA; the API
// server may already serve the Paints through a handler built from that
// CRD. The first requests after Start must reach the new webhook server.
func TestWebhooksInEffectAfterRestart(t *testing.T) {
	first := StartTestServer(t, Options{CRDPaths: []string{"testdata/conversion"}, Webhooks: webhookOptions()})
	firstWebhooks := serveTestWebhooks(t, first.Webhooks)
	ctx := t.Context()
	// Stored in v2, it needs the webhook to be read in v1.
	if _, err := dynamic.NewForConfigOrDie(first.ClientConfig).Resource(paintsV2).Namespace("default").Create(ctx, paint("v2", "blue", "color", "blue"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	firstWebhooks.close()

	// New options: another CA, and another port.
	second := StartTestServer(t, Options{DataDir: first.DataDir, CRDPaths: []string{"testdata/conversion"}, Webhooks: webhookOptions()})
	h := serveTestWebhooks(t, second.Webhooks)
	got, err := dynamic.NewForConfigOrDie(second.ClientConfig).Resource(paintsV1).Namespace("default").Get(ctx, "blue", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the first read of a Paint in v1 after the restart: %v", err)
	}
	if colour, _, _ := unstructured.NestedString(got.Object, "spec", "colour"); colour != "blue" || h.conversions.Load() == 0 {
		t.Errorf("the Paint in v1: spec %v after %d conversions by the new webhook server; want colour blue", got.Object["spec"], h.conversions.Load())
	}
	expectAdmission(t, second, h, "second")
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}

	// The webhooks of the server before: the same port and CA, so the
	// suite's webhook server goes on serving across the restart.
	third := StartTestServer(t, Options{DataDir: first.DataDir, CRDPaths: []string{"testdata/conversion"}, Webhooks: second.Webhooks})
	if third.Webhooks.LocalServingPort != second.Webhooks.LocalServingPort || string(third.Webhooks.LocalServingCAData) != string(second.Webhooks.LocalServingCAData) {
		t.Errorf("restarted with the Webhooks of the server before: port %d, was %d; CA the same: %t", third.Webhooks.LocalServingPort, second.Webhooks.LocalServingPort, string(third.Webhooks.LocalServingCAData) == string(second.Webhooks.LocalServingCAData))
	}
	h.mutations.Store(0)
	h.validations.Store(0)
	expectAdmission(t, third, h, "third")
}

func TestStartFailsOnWebhookErrors(t *testing.T) {
	// Read before the server starts, as CRDPaths are.
	_, err := Start(t.Context(), t.TempDir, Options{Webhooks: &install.WebhookOptions{Paths: []string{"testdata/missing"}}})
	if err == nil || !strings.Contains(err.Error(), `Options.Webhooks: WebhookOptions.Paths: "testdata/missing" does not exist`) {
		t.Fatalf("start with a missing webhook path: want an error naming it, got %v", err)
	}
}
