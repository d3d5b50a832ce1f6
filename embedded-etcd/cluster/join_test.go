package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/fake"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

// tlsServer serves handler on 127.0.0.1 with the serving certificate of a
// new PKI, which carries its CA as a server of the cluster does.
func tlsServer(t *testing.T, handler http.Handler) (*httptest.Server, *pki.PKI) {
	t.Helper()
	creds, err := pki.Ensure(t.TempDir(), pki.Hosts{Serving: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(creds.ServingCertFile, creds.ServingKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, creds
}

var testRequest = JoinRequest{Name: "server-2", PeerURL: "https://127.0.0.2:2380"}

func TestJoinPinsTheCAAndSaysWhyItFails(t *testing.T) {
	tests := []struct {
		name string
		// statuses are the server's answers, one per request.
		statuses []int
		wrongPin bool
		// wantRequests the server sees; wantErr in the error, "" for success.
		wantRequests int
		wantErr      string
	}{
		{name: "joins", statuses: []int{http.StatusOK}, wantRequests: 1},
		{name: "a busy server is asked again", statuses: []int{http.StatusServiceUnavailable, http.StatusOK}, wantRequests: 2},
		{name: "a refused token is not sent again", statuses: []int{http.StatusUnauthorized}, wantRequests: 1, wantErr: "refused the token"},
		{name: "a conflict is final", statuses: []int{http.StatusConflict}, wantRequests: 1, wantErr: "refused the join: conflict"},
		{name: "a server without the pinned CA gets nothing", wrongPin: true, wantRequests: 0, wantErr: "does not present the CA the token pins"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int32
			srv, creds := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(requests.Add(1)) - 1
				if r.URL.Path != jointoken.JoinPath || r.Header.Get("Authorization") != "Bearer abcdef.0123456789abcdefghijklmnopqrstuv" {
					writeFailure(w, http.StatusBadRequest, "unexpected request "+r.URL.Path)
					return
				}
				if code := tc.statuses[n]; code != http.StatusOK {
					writeFailure(w, code, "conflict")
					return
				}
				json.NewEncoder(w).Encode(JoinResponse{MemberID: "1", InitialCluster: "a=https://127.0.0.1:2380"}) //nolint:errcheck
			}))
			hash := jointoken.CAHash(creds.CA.Cert)
			if tc.wrongPin {
				other, err := pki.Ensure(t.TempDir(), pki.Hosts{})
				if err != nil {
					t.Fatal(err)
				}
				hash = jointoken.CAHash(other.CA.Cert)
			}
			token := jointoken.Token{CAHash: hash, ID: "abcdef", Secret: "0123456789abcdefghijklmnopqrstuv"}
			resp, err := Join(t.Context(), srv.URL, token, testRequest)
			if got := int(requests.Load()); got != tc.wantRequests {
				t.Errorf("server saw %d requests, want %d", got, tc.wantRequests)
			}
			if tc.wantErr == "" {
				if err != nil || resp.InitialCluster != "a=https://127.0.0.1:2380" {
					t.Fatalf("Join: %+v, %v", resp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Join error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestJoinRequestValidate(t *testing.T) {
	for _, r := range []JoinRequest{
		{Name: "", PeerURL: "https://127.0.0.2:2380"},
		{Name: "Server_2", PeerURL: "https://127.0.0.2:2380"},
		{Name: "server-2", PeerURL: "http://127.0.0.2:2380"},
		{Name: "server-2", PeerURL: "https://127.0.0.2"},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
	if err := testRequest.Validate(); err != nil {
		t.Errorf("%+v: %v", testRequest, err)
	}
}

// joinTestServer is a JoinHandler on a one-member embedded etcd, with the
// tokens in a fake API.
type joinTestServer struct {
	handler *JoinHandler
	etcd    *embeddedetcd.Server
	tokens  *jointoken.Store
}

func newJoinTestServer(t *testing.T) *joinTestServer {
	t.Helper()
	dir := t.TempDir()
	creds, err := pki.Ensure(filepath.Join(dir, "pki"), pki.Hosts{})
	if err != nil {
		t.Fatal(err)
	}
	etcd, err := embeddedetcd.Start(t.Context(), embeddedetcd.Config{DataDir: filepath.Join(dir, "etcd"), SocketPath: filepath.Join(dir, "run", "etcd.sock"),
		PeerCertFile: creds.EtcdPeerCertFile, PeerKeyFile: creds.EtcdPeerKeyFile, PeerTrustedCAFile: creds.EtcdCA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	client := etcd.Client()
	t.Cleanup(func() { client.Close() }) //nolint:errcheck
	tokens := jointoken.NewStore(fake.NewClientset())
	return &joinTestServer{handler: NewJoinHandler(client, tokens, creds.Dir, ""), etcd: etcd, tokens: tokens}
}

// join serves a join of req authenticated with credential (id.secret), as
// the API server's authentication hands it on, within timeout.
func (s *joinTestServer) join(t *testing.T, credential string, req JoinRequest, timeout time.Duration) *httptest.ResponseRecorder {
	t.Helper()
	body, _ := json.Marshal(req)
	id, _, _ := strings.Cut(credential, ".")
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: jointoken.UserPrefix + id, Groups: []string{jointoken.Group}})
	ctx = WithToken(ctx, credential)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, jointoken.JoinPath, strings.NewReader(string(body)))
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, r)
	return w
}

func (s *joinTestServer) token(t *testing.T, singleUse bool) string {
	t.Helper()
	token, _, err := s.tokens.Create(t.Context(), "sha256:"+strings.Repeat("0", 64), jointoken.CreateOptions{TTL: time.Hour, Usages: []string{jointoken.UsageJoin}, SingleUse: singleUse})
	if err != nil {
		t.Fatal(err)
	}
	return token.Credential()
}

func (s *joinTestServer) learners(t *testing.T) []string {
	t.Helper()
	list, err := s.handler.Etcd.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, m := range list.Members {
		if m.IsLearner {
			urls = append(urls, m.PeerURLs...)
		}
	}
	return urls
}

func TestJoinHandler(t *testing.T) {
	s := newJoinTestServer(t)

	// A wrong secret adds no member.
	credential := s.token(t, true)
	id, _, _ := strings.Cut(credential, ".")
	if w := s.join(t, id+"."+strings.Repeat("x", 32), testRequest, 10*time.Second); w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d %s", w.Code, w.Body)
	}
	if got := s.learners(t); len(got) != 0 {
		t.Fatalf("learners after a refused join: %v", got)
	}

	// A join adds the member as a learner and hands over the shared
	// credentials and the cluster to start it in.
	w := s.join(t, credential, testRequest, 10*time.Second)
	if w.Code != http.StatusOK {
		t.Fatalf("join: %d %s", w.Code, w.Body)
	}
	var resp JoinResponse
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	if got := s.learners(t); len(got) != 1 || got[0] != testRequest.PeerURL {
		t.Fatalf("learners: %v, want %s", got, testRequest.PeerURL)
	}
	if !strings.Contains(resp.InitialCluster, "server-2="+testRequest.PeerURL) || !strings.Contains(resp.InitialCluster, embeddedetcd.DefaultMemberName+"=") {
		t.Errorf("initial cluster %q lacks a member", resp.InitialCluster)
	}
	want, err := ReadShared(s.handler.PKIDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range want {
		if string(resp.Credentials[name]) != string(data) {
			t.Errorf("credential %s differs from the server's", name)
		}
	}

	// The single-use token is used up: the authenticator refuses it from now on.
	if infos, err := s.tokens.List(t.Context()); err != nil || len(infos) != 0 {
		t.Errorf("tokens after a single-use join: %+v, %v; want none", infos, err)
	}

	// Another member waits while the learner catches up (it never does
	// here) and gives up at its deadline, its token unused.
	second := s.token(t, true)
	w = s.join(t, second, JoinRequest{Name: "server-3", PeerURL: "https://127.0.0.3:2380"}, time.Second)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "another member is joining") {
		t.Errorf("second join: %d %s, want 503 saying it waited", w.Code, w.Body)
	}
	if got := s.learners(t); len(got) != 1 {
		t.Errorf("learners after the waiting join: %v", got)
	}

	// The same server joining again (after it failed before starting its
	// member) replaces its unstarted learner; a name or peer URL taken by
	// another member is refused.
	if w := s.join(t, s.token(t, false), testRequest, 10*time.Second); w.Code != http.StatusOK {
		t.Errorf("joining again: %d %s", w.Code, w.Body)
	}
	if got := s.learners(t); len(got) != 1 {
		t.Errorf("learners after joining again: %v", got)
	}
	for _, req := range []JoinRequest{
		{Name: embeddedetcd.DefaultMemberName, PeerURL: "https://127.0.0.4:2380"},
	} {
		if w := s.join(t, s.token(t, false), req, 10*time.Second); w.Code != http.StatusConflict {
			t.Errorf("%+v: %d %s, want a conflict", req, w.Code, w.Body)
		}
	}
}
