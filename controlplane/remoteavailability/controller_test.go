package remoteavailability

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/serviceresolver"
)

// locator answers every reference with one location, or one error.
type locator struct {
	location serviceresolver.Location
	err      error
}

func (l locator) Locate(string, string, int32) (serviceresolver.Location, error) {
	return l.location, l.err
}

// tlsServer serves discovery of wardle.example.com/v1alpha1 (status
// answers it) with a certificate for api.wardle.svc, as an aggregated
// server behind the service reference wardle/api would; it returns the
// server and its CA bundle.
func tlsServer(t *testing.T, host string, status int) (*httptest.Server, []byte) {
	t.Helper()
	return tlsServerDropping(t, host, status, 0)
}

// tlsServerDropping is tlsServer, closing the connection of the first drop
// requests without an answer.
func tlsServerDropping(t *testing.T, host string, status int, drop int32) (*httptest.Server, []byte) {
	t.Helper()
	var requests atomic.Int32
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The aggregator's identity, as upstream's check sends it.
		if r.URL.Path != "/apis/wardle.example.com/v1alpha1" || r.Header.Get("X-Remote-User") != "system:kube-aggregator" {
			http.NotFound(w, r)
			return
		}
		if requests.Add(1) <= drop {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijacking the connection to drop it: %v", err)
				return
			}
			_ = conn.Close()
			return
		}
		w.WriteHeader(status)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, certPEM
}

func TestSync(t *testing.T) {
	answering, answeringCA := tlsServer(t, "api.wardle.svc", http.StatusOK)
	// Drops one request of the check's: as upstream's, the check asks
	// more than once, and one answer is enough.
	dropping, droppingCA := tlsServerDropping(t, "api.wardle.svc", http.StatusOK, 1)
	// Serves a certificate for another name: the check must refuse it.
	impostor, impostorCA := tlsServer(t, "other.wardle.svc", http.StatusOK)
	forbidding, forbiddingCA := tlsServer(t, "api.wardle.svc", http.StatusForbidden)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	at := func(s string, by string) locator {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		u.Scheme = "https"
		return locator{location: serviceresolver.Location{URL: u, By: by}}
	}
	tests := []struct {
		name        string
		locator     locator
		caBundle    []byte
		wantStatus  apiregistrationv1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "answering", locator: at(answering.URL, "api.wardle"), caBundle: answeringCA,
			wantStatus: apiregistrationv1.ConditionTrue, wantReason: ReasonPassed},
		{name: "a request dropped", locator: at(dropping.URL, "api.wardle"), caBundle: droppingCA,
			wantStatus: apiregistrationv1.ConditionTrue, wantReason: ReasonPassed},
		{name: "certificate for another name", locator: at(impostor.URL, "api.wardle"), caBundle: impostorCA,
			wantStatus: apiregistrationv1.ConditionFalse, wantReason: ReasonFailedDiscoveryCheck, wantMessage: "certificate"},
		{name: "forbidden", locator: at(forbidding.URL, "api.wardle"), caBundle: forbiddingCA,
			wantStatus: apiregistrationv1.ConditionFalse, wantReason: ReasonFailedDiscoveryCheck, wantMessage: "bad status"},
		{name: "nothing listening", locator: at(closedURL, "api.wardle"), caBundle: answeringCA,
			wantStatus: apiregistrationv1.ConditionFalse, wantReason: ReasonFailedDiscoveryCheck, wantMessage: "connection refused"},
		{name: "no ServiceLocation, no DNS name", locator: at("https://api.wardle.invalid:443", ""), caBundle: answeringCA,
			wantStatus: apiregistrationv1.ConditionFalse, wantReason: ReasonServiceNotFound, wantMessage: "create a ServiceLocation named api.wardle"},
		{name: "port not located", locator: locator{err: serviceresolver.ErrPortNotLocated},
			wantStatus: apiregistrationv1.ConditionFalse, wantReason: ReasonServicePortError},
		{name: "ServiceLocations unreadable", locator: locator{err: errors.New("cache broken")},
			wantStatus: apiregistrationv1.ConditionUnknown, wantReason: ReasonServiceAccessError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			apiService := &apiregistrationv1.APIService{
				ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
				Spec: apiregistrationv1.APIServiceSpec{
					Group: "wardle.example.com", Version: "v1alpha1", GroupPriorityMinimum: 1000, VersionPriority: 15,
					Service:  &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "api", Port: ptr.To[int32](443)},
					CABundle: tc.caBundle,
				},
			}
			c, client := newController(t, tc.locator, apiService)
			err := c.sync(t.Context(), apiService.Name)
			if (err == nil) != (tc.wantStatus == apiregistrationv1.ConditionTrue) {
				t.Errorf("sync: %v; an unavailable APIService is an error (to be checked again), an available one is not", err)
			}
			got, getErr := client.ApiregistrationV1().APIServices().Get(t.Context(), apiService.Name, metav1.GetOptions{})
			if getErr != nil {
				t.Fatal(getErr)
			}
			condition := apiregistrationv1helper.GetAPIServiceConditionByType(got, apiregistrationv1.Available)
			if condition == nil {
				t.Fatal("no Available condition")
			}
			if condition.Status != tc.wantStatus || condition.Reason != tc.wantReason || !strings.Contains(condition.Message, tc.wantMessage) {
				t.Errorf("Available=%s (%s: %s); want %s (%s: ...%s...)", condition.Status, condition.Reason, condition.Message, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

// A local APIService is upstream's local controller's: left alone.
func TestSyncLeavesLocalAPIServices(t *testing.T) {
	local := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.example.com"},
		Spec:       apiregistrationv1.APIServiceSpec{Group: "example.com", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15},
	}
	c, client := newController(t, locator{err: errors.New("must not be asked")}, local)
	if err := c.sync(t.Context(), local.Name); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("the local APIService was written: %v", a)
		}
	}
}

func newController(t *testing.T, l Locator, apiService *apiregistrationv1.APIService) (*Controller, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(apiService)
	factory := aggregatorinformers.NewSharedInformerFactory(client, 0)
	apiServices := factory.Apiregistration().V1().APIServices()
	c, err := New(apiServices, nil, client.ApiregistrationV1(), l, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return c, client
}
