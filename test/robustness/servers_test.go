//go:build robustness

package robustness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
)

// readyTimeout bounds a server's start, a join included.
const readyTimeout = 2 * time.Minute

// server is one control plane process of a topology, on a host of its
// own, started (and killed, paused, restarted) by the run.
type server struct {
	name       string
	binary     string
	host       *host
	port       int
	dataDir    string
	logDir     string
	args       []string
	kubeconfig string

	// api: an API server, which the traffic goes through (else an etcd
	// member of the external topology).
	api bool
	// ready, if set, says the process is ready (else its ready line).
	ready func(ctx context.Context) error

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	starts  int
	running bool
	// exited is how the last process ended (exit status or signal).
	exited error
}

// newServer is an API server on h: it serves on both of the host's
// addresses (bound to every address of its namespace), and advertises the
// peer one, where its etcd member listens, so that the other servers
// reach it, its member and its API alike, over the peer bridge.
func newServer(binary, dir, name string, h *host, extra ...string) (*server, error) {
	s := &server{name: name, binary: binary, host: h, port: apiPort, api: true,
		dataDir: filepath.Join(dir, name, "data"), logDir: filepath.Join(dir, name)}
	s.args = append([]string{"--data-dir=" + s.dataDir, "--bind-address=0.0.0.0", "--advertise-address=" + h.peerIP,
		"--tls-san=" + h.clientIP, "--secure-port=" + strconv.Itoa(apiPort), "--etcd-peer-port=" + strconv.Itoa(etcdPeerPort)}, extra...)
	return s, os.MkdirAll(s.logDir, 0o700)
}

// url is where the run's clients reach the server.
func (s *server) url() string {
	return "https://" + net.JoinHostPort(s.host.clientIP, strconv.Itoa(s.port))
}

// start runs the server with its arguments and once (flags for this start
// only, e.g. --join), and waits until it prints its ready line.
func (s *server) start(ctx context.Context, once ...string) error {
	s.mu.Lock()
	s.starts++
	logs := filepath.Join(s.logDir, fmt.Sprintf("log-%d.txt", s.starts))
	out, err := os.Create(logs)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cmd := s.host.command(context.Background(), s.binary, append(append([]string{}, s.args...), once...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.mu.Unlock()
		return err
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("starting %s: %w", s.name, err)
	}
	s.cmd, s.done, s.running = cmd, make(chan struct{}), true
	done := s.done
	s.mu.Unlock()

	// The output to the log (and the ready line looked for in it), then
	// the process's end: the log is closed once both are over.
	ready := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := scanner.Text()
			fmt.Fprintln(out, line)
			if path, ok := strings.CutPrefix(line, "  export KUBECONFIG="); ok {
				ready <- path
			}
		}
		io.Copy(io.Discard, stdout) //nolint:errcheck
	}()
	go func() {
		waitErr := cmd.Wait() // ended, as the run asked or not
		<-copied
		out.Close() //nolint:errcheck
		s.mu.Lock()
		s.running, s.exited = false, waitErr
		s.mu.Unlock()
		close(done)
	}()

	if s.ready != nil {
		readyCtx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- s.ready(readyCtx) }()
		select {
		case err := <-errc:
			if err != nil {
				s.kill()
				return fmt.Errorf("%s was not ready: %w (%s)", s.name, err, logs)
			}
			return nil
		case <-done:
			return fmt.Errorf("%s exited before it was ready: %v (%s)", s.name, s.exitStatus(), logs)
		}
	}
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case path := <-ready:
		s.mu.Lock()
		s.kubeconfig = path
		s.mu.Unlock()
		return nil
	case <-done:
		return fmt.Errorf("%s exited before it was ready: %v (%s)", s.name, s.exitStatus(), logs)
	case <-timer.C:
		s.kill()
		return fmt.Errorf("%s was not ready within %s (%s)", s.name, readyTimeout, logs)
	case <-ctx.Done():
		s.kill()
		return ctx.Err()
	}
}

func (s *server) exitStatus() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited
}

func (s *server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		s.cmd.Process.Signal(sig) //nolint:errcheck // it may have exited
	}
}

// kill ends the server at once (SIGKILL) and waits for it.
func (s *server) kill() {
	s.signal(syscall.SIGCONT)
	s.signal(syscall.SIGKILL)
	s.wait()
}

func (s *server) pause()  { s.signal(syscall.SIGSTOP) }
func (s *server) resume() { s.signal(syscall.SIGCONT) }

func (s *server) doneChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		d := make(chan struct{})
		close(d)
		return d
	}
	return s.done
}

func (s *server) wait() { <-s.doneChan() }

// config is a client configuration of the server's admin.
func (s *server) config() (*rest.Config, error) {
	s.mu.Lock()
	kubeconfig := s.kubeconfig
	s.mu.Unlock()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Host = s.url()
	cfg.TLSClientConfig.ServerName = s.host.clientIP
	cfg.Dial = s.host.net.dial
	// The hosts' addresses are not loopback: a proxy of the environment
	// would be used, and is not reachable from the switch namespace.
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 10 * time.Second
	return cfg, nil
}

// run runs a subcommand of the binary on the server's host.
func (s *server) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := s.host.command(ctx, s.binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", s.binary, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// topology is a set of servers serving one API.
type topology struct {
	name string
	net  *network
	// mu guards servers, which faults change while the traffic reads them.
	mu      sync.Mutex
	servers []*server
	// members: the topology's etcd has several members, to kill or
	// pause one at a time (joined, external).
	members bool
	// joined: the members are the servers' embedded ones (joined), else
	// processes of their own (external); etcdFlags and etcdClient reach
	// those.
	joined     bool
	etcdFlags  []string
	etcdClient clientv3.Config
	binary     string
	dir        string
}

// newTopology is a topology with its network and no server yet.
func newTopology(ctx context.Context, name, binary, dir string) (*topology, error) {
	n, err := newNetwork(ctx)
	if err != nil {
		return nil, err
	}
	return &topology{name: name, net: n, binary: binary, dir: dir}, nil
}

// startSingle starts one server on its embedded etcd.
func startSingle(ctx context.Context, binary, dir string) (*topology, error) {
	t, err := newTopology(ctx, "single", binary, dir)
	if err != nil {
		return nil, err
	}
	h, err := t.net.addHost(ctx)
	if err != nil {
		return t, err
	}
	s, err := newServer(binary, dir, "server-0", h)
	if err != nil {
		return t, err
	}
	t.servers = []*server{s}
	return t, s.start(ctx)
}

// startJoined starts three servers on hosts of their own, the first with
// --cluster-init, the others joined with a token.
func startJoined(ctx context.Context, binary, dir string) (*topology, error) {
	t, err := newTopology(ctx, "joined", binary, dir)
	if err != nil {
		return nil, err
	}
	t.members, t.joined = true, true
	h, err := t.net.addHost(ctx)
	if err != nil {
		return t, err
	}
	first, err := newServer(binary, dir, "server-0", h)
	if err != nil {
		return t, err
	}
	t.servers = append(t.servers, first)
	if err := first.start(ctx, "--cluster-init"); err != nil {
		return t, err
	}
	for range 2 {
		if _, err := t.join(ctx); err != nil {
			return t, err
		}
	}
	return t, nil
}

// join starts a new server on a new host, joined to the cluster through a
// running server, with a single-use token.
func (t *topology) join(ctx context.Context) (*server, error) {
	via := t.anyRunning()
	if via == nil {
		return nil, errors.New("no running server to join through")
	}
	token, err := via.run(ctx, "token", "create", "--kubeconfig="+via.kubeconfig, "--single-use", "--ttl=10m")
	if err != nil {
		return nil, err
	}
	h, err := t.net.addHost(ctx)
	if err != nil {
		return nil, err
	}
	// Named after its host: a joined topology's hosts are its servers'.
	s, err := newServer(t.binary, t.dir, fmt.Sprintf("server-%d", h.index-1), h)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(s.logDir, "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, err
	}
	if err := s.start(ctx, "--join="+via.url(), "--token-file="+tokenFile); err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.servers = append(t.servers, s)
	t.mu.Unlock()
	return s, nil
}

// anyRunning is an API server that runs.
func (t *topology) anyRunning() *server {
	if rs := apiServers(running(t)); len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// clusterMembers lists the cluster's members through a running server.
func (t *topology) clusterMembers(ctx context.Context) ([]cluster.MemberStatus, error) {
	via := t.anyRunning()
	if via == nil {
		return nil, errors.New("no running server")
	}
	out, err := via.run(ctx, "cluster", "members", "-o", "json", "--kubeconfig="+via.kubeconfig)
	if err != nil {
		return nil, err
	}
	var members []cluster.MemberStatus
	return members, json.Unmarshal([]byte(out), &members)
}

// serverOf is the server whose member has peer URL on its address.
func (t *topology) serverOf(m cluster.MemberStatus) *server {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.servers {
		for _, u := range m.PeerURLs {
			if strings.Contains(u, "//"+s.host.peerIP+":") {
				return s
			}
		}
	}
	return nil
}

// teardown kills every server (those a fault took out of the topology
// have ended already), then removes the network.
func (t *topology) teardown() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.servers {
		s.kill()
	}
	if t.net != nil {
		t.net.close()
	}
}
