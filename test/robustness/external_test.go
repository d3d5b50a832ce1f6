//go:build robustness

package robustness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// etcdMembers is the size of the external topology's etcd cluster.
const etcdMembers = 3

// startExternal starts three etcd members (processes of SGCP_ETCD, client
// and peer TLS with client certificates) and two API servers on them, each
// on a host of its own: the members listen for clients on the client
// bridge and for their peers on the peer bridge.
func startExternal(ctx context.Context, binary, etcdBinary, dir string) (*topology, error) {
	if etcdBinary == "" {
		return nil, errors.New("SGCP_ETCD names no etcd binary: run make robustness, which builds it (make etcd)")
	}
	t, err := newTopology(ctx, "external", binary, dir)
	if err != nil {
		return nil, err
	}
	t.members = true
	var hosts []*host
	var addresses []string
	for range etcdMembers {
		h, err := t.net.addHost(ctx)
		if err != nil {
			return t, err
		}
		hosts, addresses = append(hosts, h), append(addresses, h.clientIP, h.peerIP)
	}
	creds, err := externaltlstest.NewCredentials(filepath.Join(dir, "tls"), addresses...)
	if err != nil {
		return t, err
	}
	var initial, clientURLs []string
	for i, h := range hosts {
		name := fmt.Sprintf("etcd-%d", i)
		client := "https://" + net.JoinHostPort(h.clientIP, strconv.Itoa(etcdClientPort))
		peer := "https://" + net.JoinHostPort(h.peerIP, strconv.Itoa(etcdPeerPort))
		initial, clientURLs = append(initial, name+"="+peer), append(clientURLs, client)
		s := &server{name: name, binary: etcdBinary, host: h, port: etcdClientPort, logDir: filepath.Join(dir, name), dataDir: filepath.Join(dir, name, "data")}
		s.args = append([]string{"--name=" + name, "--data-dir=" + s.dataDir,
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster-token=robustness", "--log-level=warn"}, creds.MemberFlags()...)
		if err := os.MkdirAll(s.logDir, 0o700); err != nil {
			return t, err
		}
		t.servers = append(t.servers, s)
	}
	t.etcdFlags = append([]string{"--etcd-servers=" + strings.Join(clientURLs, ",")}, creds.ClientFlags()...)
	if t.etcdClient, err = t.etcdConfig(clientURLs, creds); err != nil {
		return t, err
	}
	for i, s := range t.servers {
		s.args = append(s.args, "--initial-cluster="+strings.Join(initial, ","))
		s.ready = func(ctx context.Context) error {
			cfg, err := t.etcdConfig(clientURLs[i:i+1], creds)
			if err != nil {
				return err
			}
			for {
				c, err := etcdclient.Connect(ctx, cfg)
				if err == nil {
					c.Close() //nolint:errcheck
					return nil
				}
				if ctx.Err() != nil {
					return err
				}
				sleep(ctx, 100*time.Millisecond)
			}
		}
	}
	if err := startTogether(ctx, t.servers); err != nil {
		return t, err
	}
	for i := range 2 {
		h, err := t.net.addHost(ctx)
		if err != nil {
			return t, err
		}
		s, err := newServer(binary, dir, fmt.Sprintf("server-%d", i), h, t.etcdFlags...)
		if err != nil {
			return t, err
		}
		t.servers = append(t.servers, s)
		if err := s.start(ctx); err != nil {
			return t, err
		}
	}
	return t, nil
}

// etcdConfig is a client of the external members, dialing from where the
// run's clients are.
func (t *topology) etcdConfig(endpoints []string, creds *externaltlstest.Credentials) (clientv3.Config, error) {
	cfg, err := etcdclient.Config(endpoints, creds.CAFile, creds.ClientCertFile, creds.ClientKeyFile)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, address string) (net.Conn, error) {
		return t.net.dial(ctx, "tcp", address)
	}))
	return cfg, err
}

// startTogether starts servers at once, as a cluster's members must be.
func startTogether(ctx context.Context, servers []*server) error {
	var wg sync.WaitGroup
	errs := make([]error, len(servers))
	for i, s := range servers {
		wg.Go(func() { errs[i] = s.start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// etcdLeaderOrFollower is the external cluster's leader, or a voter that
// does not lead, as the members that answer report them.
func (t *topology) etcdLeaderOrFollower(ctx context.Context, leader bool) (*server, error) {
	c, err := etcdclient.Connect(ctx, t.etcdClient)
	if err != nil {
		return nil, err
	}
	defer c.Close() //nolint:errcheck
	st, err := maintenance.GetStatus(ctx, c)
	if st == nil {
		return nil, err
	}
	for _, m := range st.Members {
		if (m.ID == st.LeaderID) != leader || m.Learner {
			continue
		}
		for _, s := range running(t) {
			if s.name == m.Name {
				return s, nil
			}
		}
	}
	return nil, fmt.Errorf("no running %s among the etcd members (leader %x)", map[bool]string{true: "leader", false: "follower"}[leader], st.LeaderID)
}
