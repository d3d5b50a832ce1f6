//go:build robustness

package robustness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// etcdMembers is the size of the external topology's etcd cluster.
const etcdMembers = 3

// startExternal starts three etcd members (processes of SGCP_ETCD, client
// and peer TLS with client certificates) and two API servers on them.
func startExternal(ctx context.Context, binary, etcdBinary, dir string) (*topology, error) {
	if etcdBinary == "" {
		return nil, errors.New("SGCP_ETCD names no etcd binary: run make robustness, which builds it (make etcd)")
	}
	t := &topology{name: "external", binary: binary, dir: dir, members: true}
	creds, err := externaltlstest.NewCredentials(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, err
	}
	var initial, clientURLs []string
	for i := range etcdMembers {
		clientPort, err := freePortOn("127.0.0.1")
		if err != nil {
			return nil, err
		}
		peerPort, err := freePortOn("127.0.0.1")
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("etcd-%d", i)
		client, peer := "https://127.0.0.1:"+strconv.Itoa(clientPort), "https://127.0.0.1:"+strconv.Itoa(peerPort)
		initial, clientURLs = append(initial, name+"="+peer), append(clientURLs, client)
		s := &server{name: name, binary: etcdBinary, ip: "127.0.0.1", port: clientPort, logDir: filepath.Join(dir, name), dataDir: filepath.Join(dir, name, "data")}
		s.args = append([]string{"--name=" + name, "--data-dir=" + s.dataDir,
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
			"--initial-cluster-token=robustness", "--log-level=warn"}, creds.MemberFlags()...)
		if err := os.MkdirAll(s.logDir, 0o700); err != nil {
			return nil, err
		}
		t.servers = append(t.servers, s)
	}
	t.etcdFlags = append([]string{"--etcd-servers=" + strings.Join(clientURLs, ",")}, creds.ClientFlags()...)
	if t.etcdClient, err = etcdclient.Config(clientURLs, creds.CAFile, creds.ClientCertFile, creds.ClientKeyFile); err != nil {
		return nil, err
	}
	for _, s := range t.servers {
		s.args = append(s.args, "--initial-cluster="+strings.Join(initial, ","))
		s.ready = func(ctx context.Context) error {
			cfg, err := etcdclient.Config([]string{"https://127.0.0.1:" + strconv.Itoa(s.port)}, creds.CAFile, creds.ClientCertFile, creds.ClientKeyFile)
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
		s, err := newServer(binary, dir, fmt.Sprintf("server-%d", i), fmt.Sprintf("127.0.0.%d", i+1), t.etcdFlags...)
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
