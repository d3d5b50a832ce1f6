package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	controlplanev1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/controlplane/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
)

// serviceServer is an HTTPS server on loopback standing for the server of
// service references {namespace, name}: its certificate, issued by a CA of
// its own, is valid for their names NAME.NAMESPACE.svc alone, as a
// webhook's or an aggregated API server's would be in a cluster. That the
// control plane reaches it at all proves that it checks the certificate
// for the service's name against the caBundle, not for 127.0.0.1.
type serviceServer struct {
	*httptest.Server
	// CABundle is the PEM of the CA that issued its certificate, for the
	// caBundle of the webhook configuration or APIService.
	CABundle []byte
	// Port is the loopback port it listens on, the ServiceLocation's
	// targetPort.
	Port int32
}

// startServiceServer serves handler over TLS on a free loopback port until
// the test ends, with a certificate for dnsNames (NAME.NAMESPACE.svc of the
// service references that lead to it) from a CA of its own.
func startServiceServer(t *testing.T, handler http.Handler, dnsNames ...string) *serviceServer {
	t.Helper()
	tlsConfig, caPEM := serviceServingTLS(t, dnsNames...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	srv := serveTLS(t, ln, tlsConfig, handler)
	return &serviceServer{Server: srv, CABundle: caPEM, Port: loopbackPort(ln.Addr())}
}

// serveTLS serves handler with tlsConfig on ln until the test ends.
func serveTLS(t *testing.T, ln net.Listener, tlsConfig *tls.Config, handler http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener.Close() //nolint:errcheck // replaced by ln
	srv.Listener = ln
	srv.TLS = tlsConfig
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// unusedLoopbackPort returns a loopback port nothing listens on: one the
// kernel just gave and took back, which it does not hand out again soon.
func unusedLoopbackPort(t *testing.T) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	port := loopbackPort(ln.Addr())
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

func loopbackPort(addr net.Addr) int32 {
	return int32(addr.(*net.TCPAddr).Port)
}

// serviceServingTLS returns a TLS configuration serving a certificate for
// dnsNames, and the PEM of the new CA that issued it.
func serviceServingTLS(t *testing.T, dnsNames ...string) (*tls.Config, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "service-reference-test-ca"}, caKey)
	if err != nil {
		t.Fatalf("creating the test CA: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: dnsNames[0]},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, key.Public(), caKey)
	if err != nil {
		t.Fatalf("issuing the serving certificate of %v: %v", dnsNames, err)
	}
	caPEM, err := certutil.EncodeCertificates(ca)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}, caPEM
}

// createServiceLocation creates the ServiceLocation of the service
// reference {namespace, name}, deleted when the test ends.
func createServiceLocation(t *testing.T, cfg *rest.Config, namespace, name string, ports ...controlplanev1alpha1.ServiceLocationPort) {
	t.Helper()
	locations := versioned.NewForConfigOrDie(cfg).ControlplaneV1alpha1().ServiceLocations()
	location := &controlplanev1alpha1.ServiceLocation{
		ObjectMeta: metav1.ObjectMeta{Name: name + "." + namespace},
		Spec:       controlplanev1alpha1.ServiceLocationSpec{Address: "127.0.0.1", Ports: ports},
	}
	if _, err := locations.Create(t.Context(), location, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ServiceLocation %s: %v", location.Name, err)
	}
	t.Cleanup(func() {
		if err := locations.Delete(context.Background(), location.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			t.Errorf("delete ServiceLocation %s: %v", location.Name, err)
		}
	})
}

// port443 maps the referenced port 443 to targetPort.
func port443(targetPort int32) controlplanev1alpha1.ServiceLocationPort {
	return controlplanev1alpha1.ServiceLocationPort{Port: 443, TargetPort: targetPort}
}
