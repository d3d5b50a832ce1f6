package serviceresolver

import (
	"errors"
	"net/url"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
)

func TestLocate(t *testing.T) {
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.ServiceLocation{}, 0, cache.Indexers{})
	for _, l := range []*v1alpha1.ServiceLocation{
		{ObjectMeta: metav1.ObjectMeta{Name: "api.wardle"}, Spec: v1alpha1.ServiceLocationSpec{
			Address: "127.0.0.1", Ports: []v1alpha1.ServiceLocationPort{{Port: 443, TargetPort: 8443}, {Port: 80, TargetPort: 8080}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "webhook.v6"}, Spec: v1alpha1.ServiceLocationSpec{
			Address: "::1", Ports: []v1alpha1.ServiceLocationPort{{Port: 443, TargetPort: 9443}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes.default"}, Spec: v1alpha1.ServiceLocationSpec{
			Address: "192.0.2.1", Ports: []v1alpha1.ServiceLocationPort{{Port: 443, TargetPort: 443}}}},
	} {
		if err := informer.GetIndexer().Add(l); err != nil {
			t.Fatal(err)
		}
	}
	loopback := &url.URL{Scheme: "https", Host: "127.0.0.1:6443"}
	tests := []struct {
		name            string
		resolver        *Resolver
		namespace, svc  string
		port            int32
		wantURL, wantBy string
		wantErr         error
	}{
		{name: "located", resolver: New(informer, loopback), namespace: "wardle", svc: "api", port: 443, wantURL: "https://127.0.0.1:8443", wantBy: "api.wardle"},
		{name: "another port of it", resolver: New(informer, loopback), namespace: "wardle", svc: "api", port: 80, wantURL: "https://127.0.0.1:8080", wantBy: "api.wardle"},
		{name: "IPv6", resolver: New(informer, loopback), namespace: "v6", svc: "webhook", port: 443, wantURL: "https://[::1]:9443", wantBy: "webhook.v6"},
		{name: "port not listed", resolver: New(informer, loopback), namespace: "wardle", svc: "api", port: 8443, wantBy: "api.wardle", wantErr: ErrPortNotLocated},
		{name: "not located: DNS", resolver: New(informer, loopback), namespace: "cert-manager", svc: "webhook", port: 443, wantURL: "https://webhook.cert-manager.svc:443"},
		{name: "no ServiceLocations served: DNS", resolver: New(nil, loopback), namespace: "wardle", svc: "api", port: 443, wantURL: "https://api.wardle.svc:443"},
		// As kube-apiserver: the control plane itself, whatever is written.
		{name: "kubernetes.default is this server", resolver: New(informer, loopback), namespace: "default", svc: "kubernetes", port: 443, wantURL: "https://127.0.0.1:6443"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.resolver.Locate(tc.namespace, tc.svc, tc.port)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if l.By != tc.wantBy {
				t.Errorf("located by %q, want %q", l.By, tc.wantBy)
			}
			if err != nil {
				return
			}
			if l.URL.String() != tc.wantURL {
				t.Errorf("URL %s, want %s", l.URL, tc.wantURL)
			}
			u, err := tc.resolver.ResolveEndpoint(tc.namespace, tc.svc, tc.port)
			if err != nil || u.String() != tc.wantURL {
				t.Errorf("ResolveEndpoint = %v, %v; want %s", u, err, tc.wantURL)
			}
		})
	}
}

// The resolver hands out copies: a caller that changes the URL (the
// aggregator sets its path) does not change the next caller's.
func TestLoopbackURLIsACopy(t *testing.T) {
	r := New(nil, &url.URL{Scheme: "https", Host: "127.0.0.1:6443"})
	u, _ := r.ResolveEndpoint("default", "kubernetes", 443)
	u.Path = "/apis/example.com/v1"
	again, _ := r.ResolveEndpoint("default", "kubernetes", 443)
	if again.Path != "" {
		t.Errorf("the second URL has path %q set by the first caller", again.Path)
	}
}
