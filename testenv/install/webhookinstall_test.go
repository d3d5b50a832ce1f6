package install

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

const admissionregistrationPath = "/apis/admissionregistration.k8s.io/v1/"

// fakeAdmissionServer stores webhook configurations and, for a dry-run
// namespace creation, calls the webhooks whose object selector matches it
// as an API server does: over HTTPS, trusting their caBundle. Its
// admission chain knows the configurations as they were before the first
// write until stale namespace creations have passed, as an API server
// whose informer has not caught up.
type fakeAdmissionServer struct {
	t       *testing.T
	mu      sync.Mutex
	objects map[string][]byte // path of a configuration → JSON
	effect  map[string][]byte // what the admission chain calls
	writes  []string          // "POST path" or "PUT path", in order
	stale   int
	calls   int // webhooks called
}

func newFakeAdmissionServer(t *testing.T, stale int) *fakeAdmissionServer {
	return &fakeAdmissionServer{t: t, objects: map[string][]byte{}, effect: map[string][]byte{}, stale: stale}
}

func (f *fakeAdmissionServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	body, _ := io.ReadAll(r.Body)
	status := func(code int, reason string) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"` + reason + `","code":` + strconv.Itoa(code) + `}`))
	}
	switch {
	case r.URL.Path == "/api/v1/namespaces" && r.Method == http.MethodPost:
		if r.URL.Query().Get("dryRun") != "All" {
			f.t.Errorf("the marker request is not a dry run: %s", r.URL)
		}
		if f.stale > 0 {
			f.stale--
		} else {
			f.effect = maps.Clone(f.objects)
		}
		f.admit(body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	case strings.HasPrefix(r.URL.Path, admissionregistrationPath) && r.Method == http.MethodPost:
		var meta metav1.PartialObjectMetadata
		_ = json.Unmarshal(body, &meta)
		item := path.Join(r.URL.Path, meta.Name)
		if _, ok := f.objects[item]; ok {
			status(http.StatusConflict, "AlreadyExists")
			return
		}
		f.objects[item] = body
		f.writes = append(f.writes, "POST "+item)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	case strings.HasPrefix(r.URL.Path, admissionregistrationPath) && r.Method == http.MethodGet:
		if _, ok := f.objects[r.URL.Path]; !ok {
			status(http.StatusNotFound, "NotFound")
			return
		}
		_, _ = w.Write(f.objects[r.URL.Path])
	case strings.HasPrefix(r.URL.Path, admissionregistrationPath) && r.Method == http.MethodPut:
		f.objects[r.URL.Path] = body
		f.writes = append(f.writes, "PUT "+r.URL.Path)
		_, _ = w.Write(body)
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		status(http.StatusBadRequest, "BadRequest")
	}
}

// admit calls the webhooks in effect that match the namespace in body.
func (f *fakeAdmissionServer) admit(namespace []byte) {
	var ns metav1.PartialObjectMetadata
	if err := json.Unmarshal(namespace, &ns); err != nil {
		f.t.Error(err)
		return
	}
	for _, item := range slices.Sorted(maps.Keys(f.effect)) {
		var c struct {
			Webhooks []struct {
				ClientConfig   admissionregistrationv1.WebhookClientConfig
				ObjectSelector *metav1.LabelSelector
			}
		}
		if err := json.Unmarshal(f.effect[item], &c); err != nil {
			f.t.Error(err)
			continue
		}
		for _, webhook := range c.Webhooks {
			selector, err := metav1.LabelSelectorAsSelector(webhook.ObjectSelector)
			if err != nil || webhook.ObjectSelector == nil || !selector.Matches(labels.Set(ns.Labels)) {
				continue
			}
			f.call(webhook.ClientConfig, namespace)
		}
	}
}

func (f *fakeAdmissionServer) call(cc admissionregistrationv1.WebhookClientConfig, object []byte) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cc.CABundle)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	review, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &admissionv1.AdmissionRequest{UID: "1", Object: runtime.RawExtension{Raw: object}, DryRun: new(true)},
	})
	resp, err := client.Post(*cc.URL, "application/json", bytes.NewReader(review))
	if err != nil {
		f.t.Errorf("calling %s: %v", *cc.URL, err)
		return
	}
	defer resp.Body.Close() //nolint:errcheck // read
	var answer admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Response == nil || !answer.Response.Allowed || answer.Response.UID != "1" {
		f.t.Errorf("%s answered %+v, %v; want the request allowed", *cc.URL, answer.Response, err)
	}
	f.calls++
}

// webhooksIn returns the webhook names of the configuration at item.
func (f *fakeAdmissionServer) webhooksIn(item string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c struct{ Webhooks []struct{ Name string } }
	_ = json.Unmarshal(f.objects[item], &c)
	var names []string
	for _, w := range c.Webhooks {
		names = append(names, w.Name)
	}
	return names
}

func testOptions(t *testing.T) *WebhookOptions {
	return &WebhookOptions{
		Paths:               []string{"testdata/webhooks/manifests.yaml"},
		LocalServingCertDir: t.TempDir(),
	}
}

func TestInstallWaitsForMarkers(t *testing.T) {
	f := newFakeAdmissionServer(t, 3)
	// One configuration exists already, as after a restart.
	existing := admissionregistrationPath + "validatingwebhookconfigurations/validating-webhook-configuration"
	f.objects[existing] = []byte(`{"metadata":{"name":"validating-webhook-configuration","resourceVersion":"1"},"webhooks":[]}`)
	server := httptest.NewServer(f)
	defer server.Close()

	o := testOptions(t)
	if err := o.Install(t.Context(), fakeConfig(server), time.Minute); err != nil {
		t.Fatal(err)
	}
	mutating := admissionregistrationPath + "mutatingwebhookconfigurations/mutating-webhook-configuration"
	f.mu.Lock()
	writes, calls := f.writes, f.calls
	f.mu.Unlock()
	// Written with their markers, each called once the stale requests
	// passed, then written without.
	want := []string{"POST " + mutating, "PUT " + existing, "PUT " + mutating, "PUT " + existing}
	if !slices.Equal(writes, want) {
		t.Errorf("writes %q, want %q", writes, want)
	}
	if calls != 2 {
		t.Errorf("%d marker calls, want one per configuration after the stale requests", calls)
	}
	for item, names := range map[string][]string{
		mutating: {"mwidget.example.com"},
		existing: {"vwidget.example.com", "vgadget.example.com"},
	} {
		if got := f.webhooksIn(item); !slices.Equal(got, names) {
			t.Errorf("%s as installed: webhooks %q, want %q (the marker removed)", item, got, names)
		}
	}
}

func TestInstallTimesOut(t *testing.T) {
	// An admission chain that never sees the configurations.
	f := newFakeAdmissionServer(t, 1<<30)
	server := httptest.NewServer(f)
	defer server.Close()

	err := testOptions(t).Install(t.Context(), fakeConfig(server), 200*time.Millisecond)
	for _, want := range []string{
		"webhook configurations not in effect after 200ms",
		`the marker webhook of MutatingWebhookConfiguration "mutating-webhook-configuration", ValidatingWebhookConfiguration "validating-webhook-configuration"`,
		"are the MutatingAdmissionWebhook and ValidatingAdmissionWebhook admission plugins on?",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Install: %v; want an error that says %q", err, want)
		}
	}
	// The markers are removed all the same.
	if got := f.webhooksIn(admissionregistrationPath + "mutatingwebhookconfigurations/mutating-webhook-configuration"); !slices.Equal(got, []string{"mwidget.example.com"}) {
		t.Errorf("after a timeout the configuration holds %q, want the marker removed", got)
	}
}
