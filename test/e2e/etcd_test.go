package e2e

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// etcdMember is a member of an etcd cluster that a test runs in its own
// process, on loopback, to stand for an external etcd. It serves clients
// and peers over TLS and requires client certificates, as production etcd
// clusters do.
type etcdMember struct {
	config *embed.Config
	etcd   *embed.Etcd
	// creds are the TLS credentials of its cluster.
	creds *externaltlstest.Credentials
}

// startEtcdCluster starts an etcd cluster of n members under dir and
// returns them once they all serve. They are closed when the test ends.
func startEtcdCluster(t *testing.T, n int) []*etcdMember {
	t.Helper()
	dir := t.TempDir()
	creds, err := externaltlstest.NewCredentials(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	members := make([]*etcdMember, n)
	var initialCluster []string
	for i := range members {
		clientPort, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		peerPort, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		client := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
		peer := url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialClusterToken = "e2e"
		cfg.LogLevel = "error"
		creds.ConfigureMember(cfg)
		initialCluster = append(initialCluster, cfg.Name+"="+peer.String())
		members[i] = &etcdMember{config: cfg, creds: creds}
	}
	for _, m := range members {
		m.config.InitialCluster = strings.Join(initialCluster, ",")
		m.start(t)
		t.Cleanup(m.stop)
	}
	for _, m := range members {
		m.waitReady(t)
	}
	return members
}

// clientURL is where the member serves clients.
func (m *etcdMember) clientURL() string {
	return m.config.AdvertiseClientUrls[0].String()
}

// etcdFlags are the flags with which the control plane and the binary's
// etcd commands reach members of one cluster: --etcd-servers with their
// client URLs, and the TLS files.
func etcdFlags(members ...*etcdMember) []string {
	var urls []string
	for _, m := range members {
		urls = append(urls, m.clientURL())
	}
	return append([]string{"--etcd-servers=" + strings.Join(urls, ",")}, members[0].creds.ClientFlags()...)
}

// start starts the member, or starts it again on its data after stop.
func (m *etcdMember) start(t *testing.T) {
	t.Helper()
	e, err := embed.StartEtcd(m.config)
	if err != nil {
		t.Fatalf("starting etcd member %s: %v", m.config.Name, err)
	}
	m.etcd = e
}

// waitReady waits until the member has joined its cluster.
func (m *etcdMember) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-m.etcd.Server.ReadyNotify():
	case err := <-m.etcd.Err():
		t.Fatalf("etcd member %s: %v", m.config.Name, err)
	case <-time.After(readyTimeout):
		t.Fatalf("etcd member %s not ready within %s", m.config.Name, readyTimeout)
	}
}

// stop stops the member; it is safe to call on a stopped member.
func (m *etcdMember) stop() {
	if m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
}
