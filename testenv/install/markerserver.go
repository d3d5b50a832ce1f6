package install

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// markerServer serves Install's marker webhooks: it admits every review
// and records the paths it was called at.
type markerServer struct {
	hostPort string // as the serving certificate names the host
	server   *http.Server

	mu     sync.Mutex
	called sets.Set[string]
}

// startMarkerServer serves on a free port of host, with the serving
// certificate Prepare made for it; the API server calls it at calledHost.
func startMarkerServer(host, calledHost string, certificate *servingCertificate) (*markerServer, error) {
	cert, err := tls.X509KeyPair(certificate.cert, certificate.key)
	if err != nil {
		return nil, err
	}
	listener, err := tls.Listen("tcp", net.JoinHostPort(host, "0"), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("serving the marker webhooks on %s: %w", host, err)
	}
	_, port, _ := net.SplitHostPort(listener.Addr().String())
	m := &markerServer{hostPort: net.JoinHostPort(calledHost, port), called: sets.New[string]()}
	m.server = &http.Server{
		Handler:           m,
		ReadHeaderTimeout: 10 * time.Second,
		// A handshake the API server breaks off is no news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go m.server.Serve(listener) //nolint:errcheck // ErrServerClosed once close is called
	return m, nil
}

// url is where the marker at path is served.
func (m *markerServer) url(path string) string {
	return (&url.URL{Scheme: "https", Host: m.hostPort, Path: path}).String()
}

func (m *markerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an admission.k8s.io/v1 AdmissionReview", http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.called.Insert(r.URL.Path)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{
		TypeMeta: review.TypeMeta,
		Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true},
	})
}

// notCalled returns, sorted, what the markers at the paths of markers
// (path → what it marks) mark whose marker was not called yet.
func (m *markerServer) notCalled(markers map[string]string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var not []string
	for path, what := range markers {
		if !m.called.Has(path) {
			not = append(not, what)
		}
	}
	slices.Sort(not)
	return not
}

func (m *markerServer) close() {
	m.server.Close() //nolint:errcheck // nothing to do about it
}
