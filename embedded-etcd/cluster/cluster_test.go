package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
)

// testCluster is n etcd members in-process on loopback (plain http), each
// with the Members of its control plane; all share one fake API for the
// status reports and one fake clock.
type testCluster struct {
	t       *testing.T
	kube    *fake.Clientset
	clock   *testingclock.FakeClock
	members []*testMember
	// ready is when every member served.
	ready time.Time
}

type testMember struct {
	name    string
	etcd    *embed.Etcd
	client  *clientv3.Client
	members *Members
	stop    func()
}

// apiServerURL is the URL member i reports for its API server.
func apiServerURL(name string) string { return "https://" + name + ".example:6443" }

// startTestCluster starts n members named member-0… and waits until they
// serve; t.Cleanup stops them.
func startTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t, kube: fake.NewClientset(), clock: testingclock.NewFakeClock(time.Now())}
	peers := make([]url.URL, n)
	var initial []string
	for i := range n {
		peers[i] = url.URL{Scheme: "http", Host: freeAddr(t)}
		initial = append(initial, fmt.Sprintf("member-%d=%s", i, peers[i].String()))
	}
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("member-%d", i)
		cfg.Dir = t.TempDir()
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
		client := url.URL{Scheme: "http", Host: freeAddr(t)}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = t.Name()
		cfg.TickMs, cfg.ElectionMs = 10, 100
		// Quiet: members log errors as they are closed.
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatalf("starting %s: %v", cfg.Name, err)
		}
		m := &testMember{name: cfg.Name, etcd: e, stop: sync.OnceFunc(e.Close)}
		t.Cleanup(m.stop)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not become ready within 30s", m.name)
		}
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{m.etcd.Clients[0].Addr().String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Close() })
		m.client = client
		m.members = NewMembers(client, c.kube, m.name)
		m.members.clock = c.clock
	}
	c.ready = time.Now()
	return c
}

// freeAddr is a loopback address with a port free a moment ago: etcd's
// initial cluster names every peer URL before any member listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// reportAll writes the status report of every member still running, at the
// fake clock's time.
func (c *testCluster) reportAll(ctx context.Context) {
	c.t.Helper()
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.StopNotify():
			continue
		default:
		}
		if err := m.members.report(ctx, apiServerURL(m.name)); err != nil {
			c.t.Fatalf("report of %s: %v", m.name, err)
		}
	}
}

// leader is the member that leads now.
func (c *testCluster) leader(ctx context.Context) *testMember {
	c.t.Helper()
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.StopNotify():
			continue
		default:
		}
		status, err := m.client.Status(ctx, m.client.Endpoints()[0])
		if err != nil {
			c.t.Fatalf("status of %s: %v", m.name, err)
		}
		for _, l := range c.members {
			if uint64(l.etcd.Server.MemberID()) == status.Leader {
				return l
			}
		}
	}
	c.t.Fatal("no leader")
	return nil
}

// follower is a member that does not lead.
func (c *testCluster) follower(ctx context.Context) *testMember {
	leader := c.leader(ctx)
	for _, m := range c.members {
		if m != leader {
			return m
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// settle waits until etcd counts every peer as connected: it refuses to
// remove a voter (--strict-reconfig-check) unless the remaining quorum's
// peers have been connected to the local member for etcdserver.HealthInterval.
func (c *testCluster) settle() {
	time.Sleep(time.Until(c.ready.Add(etcdserver.HealthInterval + 500*time.Millisecond)))
}
