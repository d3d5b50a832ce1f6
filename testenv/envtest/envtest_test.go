package envtest

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The tests need the binary: $SGCP_BINARY (make test sets it) or
// sample-generic-controlplane on $PATH.

var (
	gadgetsV1 = schema.GroupVersionResource{Group: "shop.example.com", Version: "v1", Resource: "gadgets"}
	gadgetsV2 = gadgetsV1.GroupResource().WithVersion("v2")
)

// kubebuilderConfig is a config/ laid out as kubebuilder lays it out:
// kustomizations, a Service and a kustomize configuration beside the CRDs
// and webhook configurations.
var kubebuilderConfig = filepath.Join("testdata", "config")

// A suite written for envtest, kubebuilder's way, starts, and the first
// requests after its webhook server starts reach it: admission (mutating,
// validating) and conversion of a kind the Scheme holds as convertible.
func TestKubebuilderSuiteWithWebhooksAndConversion(t *testing.T) {
	t.Parallel()
	te := &Environment{
		Scheme:                convertibleGadgets(),
		CRDDirectoryPaths:     []string{filepath.Join(kubebuilderConfig, "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: WebhookInstallOptions{Paths: []string{filepath.Join(kubebuilderConfig, "webhook")}},
	}
	cfg, err := te.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if cfg == nil || te.Config == nil || cfg.Host != te.Config.Host {
		t.Fatalf("Start returned %v and set Config %v, want the same admin configuration", cfg, te.Config)
	}
	if kc, err := clientcmd.RESTConfigFromKubeConfig(te.KubeConfig); err != nil || kc.Host != cfg.Host {
		t.Errorf("KubeConfig: %v (server %v), want one for %s", err, kc, cfg.Host)
	}
	if len(te.CRDs) != 1 || te.CRDs[0].Name != "gadgets.shop.example.com" {
		t.Fatalf("CRDs = %v, want the one CRD of config/crd/bases", te.CRDs)
	}
	w := te.WebhookInstallOptions
	if len(w.MutatingWebhooks) != 1 || len(w.ValidatingWebhooks) != 1 {
		t.Errorf("WebhookInstallOptions holds %d mutating and %d validating configurations, want those of manifests.yaml alone", len(w.MutatingWebhooks), len(w.ValidatingWebhooks))
	}
	if conv := te.CRDs[0].Spec.Conversion; conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter ||
		conv.Webhook.ClientConfig.URL == nil || *conv.Webhook.ClientConfig.URL != fmt.Sprintf("https://%s/convert", net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort))) {
		t.Errorf("the CRD's conversion is %+v, want a webhook at /convert of the local webhook server", conv)
	}

	// The suite's webhook server starts after Start, as a manager's does.
	calls := serveWebhooks(t, w)

	client := dynamic.NewForConfigOrDie(cfg)
	created, err := client.Resource(gadgetsV1).Namespace("default").Create(t.Context(), gadget("small", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the first create after the webhook server started: %v", err)
	}
	if created.GetLabels()["defaulted"] != "true" {
		t.Errorf("the created Gadget's labels are %v: the mutating webhook was not called", created.GetLabels())
	}
	_, err = client.Resource(gadgetsV1).Namespace("default").Create(t.Context(), gadget("big", 11), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || err == nil || !strings.Contains(err.Error(), "size 11 is over 10") {
		t.Errorf("creating a Gadget of size 11: %v, want the validating webhook's denial", err)
	}
	v2, err := client.Resource(gadgetsV2).Namespace("default").Get(t.Context(), "small", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Gadget as v2: %v", err)
	}
	if v2.GetAPIVersion() != "shop.example.com/v2" || calls.conversions.Load() == 0 {
		t.Errorf("read as %s after %d conversion reviews, want shop.example.com/v2 through the conversion webhook", v2.GetAPIVersion(), calls.conversions.Load())
	}
}

// Without webhooks, the fields the scaffold reads are set all the same.
func TestWebhookFieldsAreSetWithoutWebhooks(t *testing.T) {
	t.Parallel()
	te := &Environment{}
	if _, err := te.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := te.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	w := te.WebhookInstallOptions
	if w.LocalServingHost == "" || w.LocalServingPort == 0 || len(w.LocalServingCAData) == 0 {
		t.Errorf("WebhookInstallOptions = %+v, want a host, a port and a CA", w)
	}
	if _, err := os.Stat(filepath.Join(w.LocalServingCertDir, "tls.crt")); err != nil {
		t.Errorf("the serving certificate: %v", err)
	}
	// The default namespace is there, as kubebuilder's tests expect.
	if _, err := kubernetes.NewForConfigOrDie(te.Config).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace default: %v", err)
	}
}

// An Environment stopped starts again, on a new control plane, with the
// same CRDs and webhooks.
func TestStartAgainAfterStop(t *testing.T) {
	t.Parallel()
	te := &Environment{
		CRDDirectoryPaths:     []string{filepath.Join(kubebuilderConfig, "crd", "bases")},
		WebhookInstallOptions: WebhookInstallOptions{Paths: []string{filepath.Join(kubebuilderConfig, "webhook")}},
	}
	for i := range 2 {
		cfg, err := te.Start()
		if err != nil {
			t.Fatalf("start %d: %v", i+1, err)
		}
		if _, err := dynamic.NewForConfigOrDie(cfg).Resource(gadgetsV1).Namespace("default").List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Errorf("start %d: listing Gadgets: %v", i+1, err)
		}
		if n := len(te.CRDs); n != 1 {
			t.Errorf("start %d: %d CRDs, want 1", i+1, n)
		}
		if n := len(te.WebhookInstallOptions.ValidatingWebhooks); n != 1 {
			t.Errorf("start %d: %d validating configurations, want 1", i+1, n)
		}
		certDir := te.WebhookInstallOptions.LocalServingCertDir
		if err := te.Stop(); err != nil {
			t.Fatalf("stop %d: %v", i+1, err)
		}
		if _, err := os.Stat(certDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stop %d: the serving certificate's directory %s: %v, want it removed", i+1, certDir, err)
		}
		if te.WebhookInstallOptions.LocalServingCertDir != "" || te.WebhookInstallOptions.LocalServingPort != 0 {
			t.Errorf("stop %d: WebhookInstallOptions keep %+v, want the serving fields the suite gave (none)", i+1, te.WebhookInstallOptions)
		}
	}
}

// AddUser gives a client certificate of the user in its groups, on the
// base configuration's settings.
func TestAddUser(t *testing.T) {
	t.Parallel()
	te := &Environment{}
	base, err := te.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { te.Stop() }) //nolint:errcheck // a failure to stop is another test's
	base.UserAgent = "suite"
	user, err := te.AddUser(User{Name: "alice", Groups: []string{"readers"}}, base)
	if err != nil {
		t.Fatalf("AddUser: %v", err)
	}
	cfg := user.Config()
	if cfg.UserAgent != "suite" || cfg.QPS != base.QPS {
		t.Errorf("the user's config lost the base's settings: user agent %q, QPS %v", cfg.UserAgent, cfg.QPS)
	}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("default").List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"alice"`) {
		t.Errorf("alice lists secrets: %v, want forbidden, naming alice", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if c, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil || len(c.CertData) == 0 {
		t.Errorf("the user's kubeconfig: %v, want its client certificate inline", err)
	}
}

// With UseExistingCluster, the CRDs go into the cluster of Config, and
// CleanUpAfterUse takes them out at Stop.
func TestUseExistingCluster(t *testing.T) {
	t.Parallel()
	cluster := &Environment{}
	cfg, err := cluster.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { cluster.Stop() }) //nolint:errcheck

	te := &Environment{
		UseExistingCluster: new(true),
		Config:             cfg,
		// config/crd holds a kustomization alone: skipped, as
		// ErrorIfCRDPathMissing is not set.
		CRDDirectoryPaths: []string{filepath.Join(kubebuilderConfig, "crd"), filepath.Join(kubebuilderConfig, "crd", "bases")},
		CRDInstallOptions: CRDInstallOptions{CleanUpAfterUse: true},
	}
	if _, err := te.Start(); err != nil {
		t.Fatalf("Start on the existing cluster: %v", err)
	}
	client := dynamic.NewForConfigOrDie(cfg)
	if _, err := client.Resource(gadgetsV1).Namespace("default").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing Gadgets: %v", err)
	}
	if _, err := te.AddUser(User{Name: "bob"}, nil); err == nil || !strings.Contains(err.Error(), "not an existing cluster") {
		t.Errorf("AddUser on an existing cluster: %v, want an error saying why", err)
	}
	if err := te.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	crds := dynamic.NewForConfigOrDie(cfg).Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if _, err := crds.Get(t.Context(), "gadgets.shop.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the CRD after Stop with CleanUpAfterUse: %v, want it deleted", err)
	}
}

// What a directory holds for nobody is an error only when asked.
func TestMissingPaths(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	for _, tc := range []struct {
		name    string
		env     Environment
		wantErr string
	}{
		{
			name:    "a missing CRD path, ErrorIfCRDPathMissing",
			env:     Environment{CRDDirectoryPaths: []string{"missing"}, ErrorIfCRDPathMissing: true},
			wantErr: `"missing" does not exist`,
		},
		{
			name:    "a directory of kustomizations alone, ErrorIfCRDPathMissing",
			env:     Environment{CRDDirectoryPaths: []string{filepath.Join(kubebuilderConfig, "webhook")}, ErrorIfCRDPathMissing: true},
			wantErr: "holds no CRDs",
		},
		{
			name:    "a missing webhook path",
			env:     Environment{WebhookInstallOptions: WebhookInstallOptions{Paths: []string{empty}}},
			wantErr: "holds no webhook configurations",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.env.Start()
			if err == nil {
				tc.env.Stop() //nolint:errcheck
				t.Fatalf("Start: no error, want one saying %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Start: %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}

func gadget(name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("shop.example.com/v1")
	u.SetKind("Gadget")
	u.SetName(name)
	unstructured.SetNestedField(u.Object, size, "spec", "size") //nolint:errcheck // a map of maps
	return u
}

// The test's Gadgets: v2 the hub, v1 convertible to it, as controller-gen
// and controller-runtime's conversion package have a project write them.
type (
	gadgetV1 struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
	gadgetV2 struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
	}
	// hub is conversion.Hub's shape.
	hub interface {
		runtime.Object
		Hub()
	}
)

func (g *gadgetV1) DeepCopyObject() runtime.Object { c := *g; return &c }
func (g *gadgetV2) DeepCopyObject() runtime.Object { c := *g; return &c }
func (*gadgetV2) Hub()                             {}
func (*gadgetV1) ConvertTo(hub) error              { return nil }
func (*gadgetV1) ConvertFrom(hub) error            { return nil }

func convertibleGadgets() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gadgetsV1.GroupVersion().WithKind("Gadget"), &gadgetV1{})
	s.AddKnownTypeWithName(gadgetsV2.GroupVersion().WithKind("Gadget"), &gadgetV2{})
	return s
}

// webhookCalls counts what the suite's webhook server was asked.
type webhookCalls struct{ conversions atomic.Int64 }

// serveWebhooks serves the Gadget webhooks where the environment says, with
// its certificate: defaulting (a label), validation (size at most 10) and
// conversion (a change of apiVersion), until the test ends.
func serveWebhooks(t *testing.T, w WebhookInstallOptions) *webhookCalls {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(w.LocalServingCertDir, "tls.crt"), filepath.Join(w.LocalServingCertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := tls.Listen("tcp", net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	calls := &webhookCalls{}
	mux := http.NewServeMux()
	mux.HandleFunc("/mutate-shop-example-com-v1-gadget", admit(t, func(*unstructured.Unstructured) *admissionv1.AdmissionResponse {
		patch := `[{"op":"add","path":"/metadata/labels","value":{"defaulted":"true"}}]`
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: new(admissionv1.PatchTypeJSONPatch)}
	}))
	mux.HandleFunc("/validate-shop-example-com-v1-gadget", admit(t, func(obj *unstructured.Unstructured) *admissionv1.AdmissionResponse {
		if size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size"); size > 10 {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Message: fmt.Sprintf("size %d is over 10", size), Code: http.StatusForbidden}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	mux.HandleFunc("/convert", func(rw http.ResponseWriter, r *http.Request) {
		calls.conversions.Add(1)
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		response := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			obj.SetAPIVersion(review.Request.DesiredAPIVersion)
			data, _ := obj.MarshalJSON()
			response.ConvertedObjects = append(response.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
		review.Response, review.Request = response, nil
		json.NewEncoder(rw).Encode(&review) //nolint:errcheck // the API server says if it is cut off
	})
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go server.Serve(listener)            //nolint:errcheck // ErrServerClosed at the end
	t.Cleanup(func() { server.Close() }) //nolint:errcheck
	return calls
}

// admit answers an AdmissionReview with decide's response.
func admit(t *testing.T, decide func(*unstructured.Unstructured) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err == nil {
			err = json.Unmarshal(body, &review)
		}
		if err != nil || review.Request == nil {
			http.Error(rw, fmt.Sprint(errors.Join(err, errors.New("no request"))), http.StatusBadRequest)
			return
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(review.Request.Object.Raw); err != nil {
			t.Errorf("the admission request's object: %v", err)
		}
		review.Response = decide(obj)
		review.Response.UID = review.Request.UID
		review.Request = nil
		json.NewEncoder(rw).Encode(&review) //nolint:errcheck
	}
}
