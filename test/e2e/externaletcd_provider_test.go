package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/externaltls"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// externalEtcdProvider runs a control plane the way users run it on more
// than one machine: an etcd cluster of three members, each a process of
// its own (etcd built from the pinned go.etcd.io/etcd/server/v3, as make
// bench builds its anchor), and replicas of the binary on it, sharing one
// PKI (docs/user-guide.md, "High availability"). The members serve clients
// and each other over TLS and require client certificates, of a CA of the
// cluster's own; the replicas reach them with --etcd-cafile,
// --etcd-certfile and --etcd-keyfile. Everything listens on loopback.
type externalEtcdProvider struct {
	// binary starts, stops and kills the replicas.
	binary *binaryProvider
	// etcd is the path of the etcd binary.
	etcd string
	// members and replicas are the sizes of each cluster it starts.
	members, replicas int
}

var (
	_ Provider    = (*externalEtcdProvider)(nil)
	_ EtcdMembers = (*externalEtcdProvider)(nil)
	_ EtcdClients = (*externalEtcdProvider)(nil)
)

func (p *externalEtcdProvider) Name() string { return "external-etcd" }

func (p *externalEtcdProvider) Can(a Action) bool {
	switch a {
	case ActionStart, ActionRestart, ActionKill, ActionLogs, ActionEtcdMembers, ActionEtcdClient, ActionReplicas, ActionReachTestHost:
		return true
	}
	return false
}

// etcdCluster is the etcd cluster under one control plane's replicas.
type etcdCluster struct {
	members []*etcdProcess
	// creds are the cluster's TLS credentials.
	creds *externaltlstest.Credentials
}

// etcdProcess is one member of an etcdCluster.
type etcdProcess struct {
	name, dir          string
	clientURL, peerURL string
	binary             string
	args               []string
	// client asks the member for its health, over TLS with a client
	// certificate.
	client *http.Client
	// runs counts the member's starts, to name each run's log.
	runs int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Start starts the etcd cluster, then the replicas one after the other:
// the first creates the PKI in its data dir (spec.DataDir), the others get
// a copy of it. The Cluster returned is the first replica; c.Replicas has
// them all.
func (p *externalEtcdProvider) Start(ctx context.Context, spec Spec) (c *Cluster, err error) {
	etcd, err := p.startEtcd(ctx, filepath.Join(spec.WorkDir, "etcd"))
	if err != nil {
		return nil, err
	}
	var replicas []*Cluster
	defer func() {
		if err != nil {
			for _, r := range replicas {
				p.binary.Kill(r)
			}
			etcd.stop()
		}
	}()
	flags := append(etcd.access().Flags(), spec.Flags...)
	for i := range p.replicas {
		rspec := Spec{WorkDir: filepath.Join(spec.WorkDir, fmt.Sprintf("replica-%d", i)), Flags: flags}
		if i == 0 {
			rspec.DataDir, rspec.Port = spec.DataDir, spec.Port
		}
		if err := os.MkdirAll(rspec.WorkDir, 0o700); err != nil {
			return nil, err
		}
		if i > 0 {
			rspec.DataDir = filepath.Join(rspec.WorkDir, "data")
			if err := copyDir(filepath.Join(replicas[0].DataDir, "pki"), filepath.Join(rspec.DataDir, "pki")); err != nil {
				return nil, fmt.Errorf("sharing the PKI with replica %d: %w", i, err)
			}
		}
		r, err := p.binary.Start(ctx, rspec)
		if err != nil {
			return nil, fmt.Errorf("replica %d: %w", i, err)
		}
		r.infra = etcd
		replicas = append(replicas, r)
	}
	for _, r := range replicas {
		r.Replicas = replicas
	}
	return replicas[0], nil
}

func (p *externalEtcdProvider) Stop(ctx context.Context, c *Cluster) error {
	return p.binary.Stop(ctx, c)
}

func (p *externalEtcdProvider) Restart(ctx context.Context, c *Cluster) error {
	return p.binary.Restart(ctx, c)
}

func (p *externalEtcdProvider) Kill(c *Cluster) { p.binary.Kill(c) }

func (p *externalEtcdProvider) Teardown(c *Cluster) {
	for _, r := range c.Replicas {
		p.binary.Kill(r)
	}
	p.binary.Kill(c)
	if etcd, ok := c.infra.(*etcdCluster); ok {
		etcd.stop()
	}
}

func (p *externalEtcdProvider) Members(c *Cluster) int {
	if etcd, ok := c.infra.(*etcdCluster); ok {
		return len(etcd.members)
	}
	return 0
}

func (p *externalEtcdProvider) StopMember(ctx context.Context, c *Cluster, i int) error {
	m, err := p.member(c, i)
	if err != nil {
		return err
	}
	return m.stop(ctx)
}

func (p *externalEtcdProvider) StartMember(ctx context.Context, c *Cluster, i int) error {
	m, err := p.member(c, i)
	if err != nil {
		return err
	}
	return m.start(ctx)
}

func (p *externalEtcdProvider) EtcdAccess(c *Cluster) (EtcdAccess, error) {
	etcd, ok := c.infra.(*etcdCluster)
	if !ok {
		return EtcdAccess{}, errors.New("control plane was not started by provider external-etcd")
	}
	return etcd.access(), nil
}

func (p *externalEtcdProvider) member(c *Cluster, i int) (*etcdProcess, error) {
	etcd, ok := c.infra.(*etcdCluster)
	if !ok {
		return nil, errors.New("control plane was not started by provider external-etcd")
	}
	if i < 0 || i >= len(etcd.members) {
		return nil, fmt.Errorf("etcd member %d: the cluster has members 0 to %d", i, len(etcd.members)-1)
	}
	return etcd.members[i], nil
}

// startEtcd starts p.members etcd processes under dir as one new cluster
// and returns once each serves clients.
func (p *externalEtcdProvider) startEtcd(ctx context.Context, dir string) (*etcdCluster, error) {
	creds, err := externaltlstest.NewCredentials(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, err
	}
	etcd := &etcdCluster{creds: creds}
	tlsConfig, err := externaltls.Files{CAFile: creds.CAFile, CertFile: creds.ClientCertFile, KeyFile: creds.ClientKeyFile}.ClientConfig()
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 5 * time.Second}
	var initialCluster []string
	for i := range p.members {
		clientPort, err := freePort()
		if err != nil {
			return nil, err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, err
		}
		m := &etcdProcess{
			name:      fmt.Sprintf("m%d", i),
			clientURL: fmt.Sprintf("https://127.0.0.1:%d", clientPort),
			peerURL:   fmt.Sprintf("https://127.0.0.1:%d", peerPort),
			client:    client,
		}
		m.dir = filepath.Join(dir, m.name)
		initialCluster = append(initialCluster, m.name+"="+m.peerURL)
		etcd.members = append(etcd.members, m)
	}
	for _, m := range etcd.members {
		m.args = []string{
			"--name=" + m.name,
			"--data-dir=" + filepath.Join(m.dir, "data"),
			"--listen-client-urls=" + m.clientURL, "--advertise-client-urls=" + m.clientURL,
			"--listen-peer-urls=" + m.peerURL, "--initial-advertise-peer-urls=" + m.peerURL,
			"--initial-cluster=" + strings.Join(initialCluster, ","),
			"--initial-cluster-token=e2e", "--initial-cluster-state=new",
			"--log-level=warn",
		}
		m.args = append(m.args, creds.MemberFlags()...)
		m.binary = p.etcd
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return nil, err
		}
	}
	// A new member waits for a quorum of its peers before it serves, so
	// all are started before any is waited for.
	for _, m := range etcd.members {
		if err := m.launch(); err != nil {
			etcd.stop()
			return nil, err
		}
	}
	for _, m := range etcd.members {
		if err := m.waitServing(ctx); err != nil {
			etcd.stop()
			return nil, err
		}
	}
	return etcd, nil
}

// access is how clients reach the cluster.
func (e *etcdCluster) access() EtcdAccess {
	a := EtcdAccess{CAFile: e.creds.CAFile, CertFile: e.creds.ClientCertFile, KeyFile: e.creds.ClientKeyFile}
	for _, m := range e.members {
		a.Endpoints = append(a.Endpoints, m.clientURL)
	}
	return a
}

// logTails prints the end of each member's log of its current (or last) run.
func (e *etcdCluster) logTails(t *testing.T) {
	for _, m := range e.members {
		path := filepath.Join(m.dir, fmt.Sprintf("etcd-%d.log", m.runs))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Logf("etcd member %s log %s: %v", m.name, path, err)
			continue
		}
		t.Logf("last lines of etcd member %s's log %s:\n%s", m.name, path, tail(string(data), logTailLines))
	}
}

// stop kills every member; it is safe to call more than once.
func (e *etcdCluster) stop() {
	for _, m := range e.members {
		m.kill()
	}
}

// launch starts the member's process on its data dir.
func (m *etcdProcess) launch() error {
	m.runs++
	logPath := filepath.Join(m.dir, fmt.Sprintf("etcd-%d.log", m.runs))
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	// Not CommandContext: the member outlives the context of its start.
	cmd := exec.Command(m.binary, m.args...)
	cmd.Stdout, cmd.Stderr = log, log
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close() //nolint:errcheck
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close() //nolint:errcheck
		close(done)
	}()
	m.cmd, m.done = cmd, done
	return nil
}

// waitServing waits until the member answers clients healthy, which takes
// a quorum of its cluster.
func (m *etcdProcess) waitServing(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.done:
			return false, fmt.Errorf("etcd member %s exited: %s", m.name, m.cmd.ProcessState)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.clientURL+"/health", nil)
		if err != nil {
			return false, err
		}
		res, err := m.client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		res.Body.Close() //nolint:errcheck
		last = res.Status
		return res.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("etcd member %s not serving (last answer: %s; log in %s): %w", m.name, last, m.dir, err)
	}
	return nil
}

// start starts the stopped member again on its data. It returns once the
// process runs, not once it serves: a member serves only with a quorum,
// which may need other members started after it.
func (m *etcdProcess) start(ctx context.Context) error {
	if m.running() {
		return fmt.Errorf("etcd member %s runs already", m.name)
	}
	if err := m.launch(); err != nil {
		return err
	}
	// The peer listener opens before the member waits for its peers.
	peer := strings.TrimPrefix(m.peerURL, "https://")
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, readyTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-m.done:
			return false, fmt.Errorf("etcd member %s exited: %s", m.name, m.cmd.ProcessState)
		default:
		}
		conn, err := net.DialTimeout("tcp", peer, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close() //nolint:errcheck
		return true, nil
	})
}

// stop stops the member with SIGTERM and waits until it has exited.
func (m *etcdProcess) stop(ctx context.Context) error {
	if !m.running() {
		return fmt.Errorf("etcd member %s is not running", m.name)
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(stopTimeout):
	case <-ctx.Done():
	}
	m.kill()
	return fmt.Errorf("etcd member %s still running %s after SIGTERM; killed it", m.name, stopTimeout)
}

// kill ends the member at once, if it runs, and waits until it has.
func (m *etcdProcess) kill() {
	if !m.running() {
		return
	}
	_ = m.cmd.Process.Kill() // fails only when it has exited already
	<-m.done
}

func (m *etcdProcess) running() bool {
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// copyDir copies the regular files of dir src into a new dir dst, keeping
// their modes.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
