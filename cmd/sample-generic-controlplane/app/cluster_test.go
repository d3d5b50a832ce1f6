package app

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
)

func TestClusterArguments(t *testing.T) {
	// Every case fails before it connects: the kubeconfig does not exist.
	const kubeconfig = "--kubeconfig=/nonexistent/admin.kubeconfig"
	cases := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "members -o wide", args: []string{"cluster", "members", "-o", "wide", kubeconfig}, wantErr: `-o: unknown output format "wide"; write -o table or -o json`},
		{name: "members with an argument", args: []string{"cluster", "members", "host-1", kubeconfig}, wantErr: `unknown command "host-1"`},
		{name: "members zero timeout", args: []string{"cluster", "members", "--timeout=0s", kubeconfig}, wantErr: "--timeout must be positive; write e.g. --timeout=30s"},
		{name: "members kubeconfig missing", args: []string{"cluster", "members", kubeconfig}, wantErr: "--kubeconfig /nonexistent/admin.kubeconfig"},
		{name: "remove without a name", args: []string{"cluster", "remove", kubeconfig}, wantErr: "cluster remove needs NAME; e.g. sample-generic-controlplane cluster remove host-1a2b3c4d"},
		{name: "remove an empty name", args: []string{"cluster", "remove", "", kubeconfig}, wantErr: "cluster remove needs NAME"},
		{name: "remove two", args: []string{"cluster", "remove", "a", "b", kubeconfig}, wantErr: "takes one NAME, got 2 arguments (a b)"},
		{name: "remove a path", args: []string{"cluster", "remove", "a/b", kubeconfig}, wantErr: `NAME "a/b": write a member's name as cluster members shows it`},
		{name: "remove -o", args: []string{"cluster", "remove", "a", "-o", "json", kubeconfig}, wantErr: "unknown shorthand flag: 'o'"},
		{name: "remove kubeconfig missing", args: []string{"cluster", "remove", "a", kubeconfig}, wantErr: "--kubeconfig /nonexistent/admin.kubeconfig"},
		{name: "unknown subcommand", args: []string{"cluster", "add"}, wantErr: `unknown command "add"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil {
				t.Fatalf("%q succeeded; output:\n%s", tc.args, out)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %q does not contain %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

func TestPrintMembers(t *testing.T) {
	members := []cluster.MemberStatus{
		{Name: "host-1a2b3c4d", ID: "8e9e05c52164694d", PeerURLs: []string{"https://10.0.0.1:2380"}, Leader: true, Healthy: true, DBSize: 25 << 20},
		{Name: "host-5e6f7a8b", ID: "91bc3c398fb3c146", PeerURLs: []string{"https://10.0.0.2:2380"}, Message: "no status report for 45s", DBSize: 24 << 20},
		{ID: "fd422379fda50e48", PeerURLs: []string{"https://10.0.0.3:2380"}, Learner: true, Message: "added to the cluster, not started yet"},
	}
	var out bytes.Buffer
	if err := printMembers(&out, members); err != nil {
		t.Fatal(err)
	}
	want := `NAME            ID                 PEER URL                ROLE      LEADER    HEALTHY   DB SIZE   MESSAGE
host-1a2b3c4d   8e9e05c52164694d   https://10.0.0.1:2380   voter     *         true      25 MiB    
host-5e6f7a8b   91bc3c398fb3c146   https://10.0.0.2:2380   voter               false     24 MiB    no status report for 45s
-               fd422379fda50e48   https://10.0.0.3:2380   learner             false     -         added to the cluster, not started yet
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := printMembersJSON(&out, nil); err != nil || out.String() != "[]\n" {
		t.Errorf("no members as JSON: %q, %v; want []", out.String(), err)
	}
}

// fakeServer is an API server's answers at cluster.MembersPath.
type fakeServer struct {
	*httptest.Server
	mu sync.Mutex
	// requests are the requests it received: method, URL, Authorization.
	requests []string
}

func newFakeServer(t *testing.T, handler http.HandlerFunc) *fakeServer {
	s := &fakeServer{}
	// TLS: clientcmd sends credentials to https servers only. Every
	// httptest server has the same certificate, as every control plane of
	// a cluster has a certificate of the same CA.
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *fakeServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func writeStatus(w http.ResponseWriter, code int, status metav1.Status) {
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Code = int32(code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(status)
}

// notLeader answers as a server whose member is not the leader, leader.
func notLeader(leaderURL string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, http.StatusMisdirectedRequest, metav1.Status{
			Status: metav1.StatusFailure, Reason: cluster.StatusReasonNotLeader,
			Message: "member host-1 is the etcd leader and the local member is not",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: cluster.CauseTypeLeaderAPIServerURL, Message: leaderURL}}},
		})
	}
}

func removed(w http.ResponseWriter, _ *http.Request) {
	writeStatus(w, http.StatusOK, metav1.Status{Status: metav1.StatusSuccess})
}

// kubeconfigFor writes a kubeconfig of server with a bearer token.
func kubeconfigFor(t *testing.T, server *fakeServer) string {
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	config := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	config.Clusters["c"] = &clientcmdapi.Cluster{Server: server.URL, CertificateAuthorityData: ca}
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret"}
	config.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin"}
	config.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestClusterRemoveRetriesAtTheLeader(t *testing.T) {
	const path = cluster.MembersPath + "/host-1?force=true Bearer secret"
	cases := []struct {
		name string
		// leader answers at the leader's URL.
		leader   http.HandlerFunc
		wantErr  string
		wantOut  []string
		wantSent int
	}{
		{name: "the leader removes it", leader: removed, wantOut: []string{"host-1 is the etcd leader", "retrying through https://127.0.0.1:", "member host-1 removed"}, wantSent: 1},
		{name: "leadership moved again", leader: notLeader("https://elsewhere.example:6443"), wantErr: "is no longer the leader's: leadership moved meanwhile; run the command again", wantSent: 1},
		{name: "the leader refuses", leader: func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, http.StatusConflict, metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonConflict, Message: "removing member host-1 would leave 2 voters of which 1 are healthy"})
		}, wantErr: ": removing member host-1 would leave 2 voters of which 1 are healthy", wantSent: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leader := newFakeServer(t, tc.leader)
			follower := newFakeServer(t, notLeader(leader.URL))
			out, err := execute(t, "cluster", "remove", "host-1", "--force", "--kubeconfig="+kubeconfigFor(t, follower), "--timeout=10s")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("failed: %v; output:\n%s", err, out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q; output:\n%s", err, tc.wantErr, out)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("output %q does not contain %q", out, want)
				}
			}
			// Each asked once, with the same credentials and --force.
			for _, s := range []*fakeServer{follower, leader} {
				if got := s.got(); len(got) != 1 || got[0] != "DELETE "+path {
					t.Errorf("%s received %q, want one DELETE %s", s.URL, got, path)
				}
			}
		})
	}
}

func TestClusterMembers(t *testing.T) {
	members := []cluster.MemberStatus{
		{Name: "host-1", ID: "1", PeerURLs: []string{"https://10.0.0.1:2380"}, Leader: true, Healthy: true, DBSize: 1 << 20,
			APIServerURL: "https://10.0.0.1:6443", LastReport: &metav1.Time{Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}},
	}
	server := newFakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(members)
	})
	kubeconfig := "--kubeconfig=" + kubeconfigFor(t, server)

	out, err := execute(t, "cluster", "members", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "host-1    1         https://10.0.0.1:2380   voter     *         true      1.0 MiB") {
		t.Errorf("table:\n%s", out)
	}
	out, err = execute(t, "cluster", "members", "-o", "json", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var got []cluster.MemberStatus
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].APIServerURL != "https://10.0.0.1:6443" || !got[0].LastReport.Equal(members[0].LastReport) {
		t.Errorf("-o json: %s (%v), want the member with its API server and last report", out, err)
	}
	if got := server.got(); len(got) != 2 || got[0] != "GET "+cluster.MembersPath+" Bearer secret" {
		t.Errorf("requests %q, want GET %s with the kubeconfig's credentials", got, cluster.MembersPath)
	}
}
