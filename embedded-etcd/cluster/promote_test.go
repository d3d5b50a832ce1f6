package cluster

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// freePeerURL returns an https URL on a free port of 127.0.0.1.
func freePeerURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck
	return "https://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startMember starts a member with peer TLS from the shared etcd CA in
// caDir; initialCluster empty starts a new cluster.
func startMember(t *testing.T, caDir, name, peerURL, initialCluster string) *embeddedetcd.Server {
	t.Helper()
	dir := t.TempDir()
	// Each member's own peer certificate, from the cluster's etcd CA.
	files, err := ReadShared(caDir)
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(dir, "pki")
	if err := WriteShared(creds, files); err != nil {
		t.Fatal(err)
	}
	p, err := pki.Ensure(creds, pki.Hosts{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := embeddedetcd.Start(t.Context(), embeddedetcd.Config{
		DataDir: filepath.Join(dir, "etcd"), SocketPath: filepath.Join(dir, "run", "etcd.sock"),
		PeerCertFile: p.EtcdPeerCertFile, PeerKeyFile: p.EtcdPeerKeyFile, PeerTrustedCAFile: p.EtcdCA.CertFile,
		Name: name, PeerURL: peerURL, InitialCluster: initialCluster,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func TestPromoterPromotesACaughtUpLearnerAndRemovesAStalledOne(t *testing.T) {
	ca := t.TempDir()
	if _, err := pki.Ensure(ca, pki.Hosts{}); err != nil {
		t.Fatal(err)
	}
	firstURL := freePeerURL(t)
	first := startMember(t, ca, "first", firstURL, "")
	if err := first.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	client := first.Client()
	defer client.Close() //nolint:errcheck

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	promoter := &Promoter{Etcd: client, IsLeader: first.IsLeader, LearnerTimeout: 3 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); promoter.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// A learner that started: promoted, and its WaitPromoted returns once it votes.
	secondURL := freePeerURL(t)
	added, err := client.MemberAddAsLearner(t.Context(), []string{secondURL})
	if err != nil {
		t.Fatal(err)
	}
	second := startMember(t, ca, "second", secondURL, "first="+firstURL+",second="+secondURL)
	if err := second.WaitReady(t.Context()); err != nil {
		t.Fatalf("the joined member never became ready: %v", err)
	}
	if err := second.WaitPromoted(t.Context()); err != nil {
		t.Fatalf("the joined member was never promoted: %v", err)
	}
	list, err := client.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.ID == added.Member.ID && m.IsLearner {
			t.Fatal("the member is ready but still a learner")
		}
	}

	// A learner that never starts: removed after LearnerTimeout. (etcd
	// adds it once the voter promoted a moment ago has been connected
	// for a while, as the join handler waits for.)
	h := &JoinHandler{Etcd: client}
	stalled, err := h.addLearner(t.Context(), freePeerURL(t))
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.MemberList(ctx)
		if err != nil {
			return false, nil
		}
		for _, m := range list.Members {
			if m.ID == stalled.Member.ID {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the stalled learner was not removed: %v", err)
	}
}
