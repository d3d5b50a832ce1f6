package integration

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// startEtcd starts an etcd member that outlives the test's control planes
// (it is cleaned up after them) and returns its client socket, for
// --etcd-servers=unix://<socket>.
func startEtcd(t *testing.T) string {
	t.Helper()
	socket := filepath.Join(shortTempDir(t), "etcd.sock")
	etcd, err := embeddedetcd.Start(t.Context(), embeddedetcd.Config{DataDir: t.TempDir(), SocketPath: socket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close) // after the servers, which are cleaned up first
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return socket
}

// etcdClient is a client of the etcd member at socket (startEtcd), for tests
// that read what the API server stored; it is closed when the test ends.
func etcdClient(t *testing.T, socket string) *clientv3.Client {
	t.Helper()
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + socket}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() }) //nolint:errcheck // best effort
	return etcd
}

// shortTempDir is a private directory short enough for unix sockets, which
// t.TempDir (named after the test) may not be.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) //nolint:errcheck
	return dir
}

// freezableProxy forwards a unix socket to etcd's until it is frozen. Frozen,
// it forwards nothing more in either direction but keeps every connection
// open and accepts new ones: requests hang, as they do on an etcd cluster
// that lost quorum, rather than fail fast as on a closed port.
type freezableProxy struct {
	Socket   string
	listener net.Listener
	target   string
	frozen   chan struct{}
	freeze   sync.Once

	mu sync.Mutex
	// open are the clients' connections that the clients have not closed.
	open map[net.Conn]bool
}

func startFreezableProxy(t *testing.T, target string) *freezableProxy {
	t.Helper()
	socket := filepath.Join(shortTempDir(t), "proxy.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	p := &freezableProxy{Socket: socket, listener: l, target: target, frozen: make(chan struct{}), open: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close() //nolint:errcheck
		p.mu.Lock()
		for c := range p.open {
			c.Close() //nolint:errcheck
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.serve(client, &wg) })
		}
	})
	return p
}

// Freeze stops forwarding for good.
func (p *freezableProxy) Freeze() { p.freeze.Do(func() { close(p.frozen) }) }

// OpenConnections counts the connections whose client has not closed them.
func (p *freezableProxy) OpenConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}

func (p *freezableProxy) serve(client net.Conn, wg *sync.WaitGroup) {
	p.mu.Lock()
	p.open[client] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.open, client)
		p.mu.Unlock()
		client.Close() //nolint:errcheck
	}()
	server, err := net.Dial("unix", p.target)
	if err != nil {
		return
	}
	defer server.Close() //nolint:errcheck
	// Only the client closing its end (or the test ending) ends the
	// connection: a frozen proxy never closes one on its own.
	wg.Go(func() { p.copy(client, server) })
	p.copy(server, client)
}

// copy forwards src to dst until src ends or the proxy is frozen; frozen,
// it still reads src, so that it notices when src is closed, and drops it.
func (p *freezableProxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
		default:
			if _, werr := dst.Write(buf[:n]); werr != nil {
				// The other end went away; keep reading src to see it close.
				dst = io.Discard
			}
		}
		if err != nil {
			return
		}
	}
}
