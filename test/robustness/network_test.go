//go:build robustness

package robustness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run's servers live on hosts: network namespaces of the run's own, each
// with two links to a switch namespace, one on the bridge of the etcd
// peers' traffic and one on the bridge of the clients'. Cutting a host's
// peer link (partition) leaves its API server answering the clients, as a
// machine whose cluster network fails does; the run's own clients reach
// the servers from the switch namespace. Nothing binds outside these
// namespaces, and each host has the ports to itself.
//
// The addresses are of 198.18.0.0/15, the range RFC 2544 sets aside for
// testing networks: peers on 198.18.1.0/24, clients on 198.18.2.0/24.
const (
	peerNet    = "198.18.1."
	clientNet  = "198.18.2."
	runnerHost = 250 // the run's clients, on the client bridge
	nsPrefix   = "sgcp-rob-"
)

// Ports, the same on every host.
const (
	apiPort        = 6443
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

// network is a run's hosts and the switch between them.
type network struct {
	prefix string // of the namespaces' names: sgcp-rob-PID-N-
	sw     string // the switch namespace

	mu    sync.Mutex
	hosts []*host
}

// host is one machine of a run: a network namespace.
type host struct {
	net      *network
	ns       string
	index    int
	peerIP   string
	clientIP string
}

var networks struct {
	sync.Mutex
	n int
}

// newNetwork makes the switch of a run's hosts. It needs the rights to
// make network namespaces (root, as make robustness runs on these
// machines); it first removes the namespaces of earlier runs whose
// process has gone.
func newNetwork(ctx context.Context) (*network, error) {
	if _, err := rootNamespace(); err != nil {
		return nil, err
	}
	if err := removeStaleNamespaces(ctx); err != nil {
		return nil, err
	}
	networks.Lock()
	networks.n++
	n := &network{prefix: fmt.Sprintf("%s%d-%d-", nsPrefix, os.Getpid(), networks.n)}
	networks.Unlock()
	n.sw = n.prefix + "sw"
	steps := [][]string{
		{"netns", "add", n.sw},
		{"-n", n.sw, "link", "set", "lo", "up"},
		{"-n", n.sw, "link", "add", "peers", "type", "bridge"},
		{"-n", n.sw, "link", "add", "clients", "type", "bridge"},
		{"-n", n.sw, "link", "set", "peers", "up"},
		{"-n", n.sw, "link", "set", "clients", "up"},
		{"-n", n.sw, "addr", "add", clientNet + strconv.Itoa(runnerHost) + "/24", "dev", "clients"},
	}
	for _, args := range steps {
		if err := ip(ctx, args...); err != nil {
			n.close()
			if errors.Is(err, exec.ErrNotFound) || strings.Contains(err.Error(), "Operation not permitted") {
				return nil, fmt.Errorf("the robustness runs make network namespaces of their own, which needs root and iproute2's ip: %w", err)
			}
			return nil, err
		}
	}
	return n, nil
}

// addHost makes a new host, with its links up.
func (n *network) addHost(ctx context.Context) (*host, error) {
	n.mu.Lock()
	i := len(n.hosts) + 1
	if i >= runnerHost {
		n.mu.Unlock()
		return nil, fmt.Errorf("a run has room for %d hosts", runnerHost-1)
	}
	h := &host{net: n, ns: n.prefix + strconv.Itoa(i), index: i, peerIP: peerNet + strconv.Itoa(i), clientIP: clientNet + strconv.Itoa(i)}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	steps := [][]string{
		{"netns", "add", h.ns},
		{"-n", h.ns, "link", "set", "lo", "up"},
	}
	for _, l := range []struct{ sw, bridge, inside, ip string }{
		{h.peerLink(), "peers", "peer0", h.peerIP},
		{"c" + strconv.Itoa(i), "clients", "client0", h.clientIP},
	} {
		steps = append(steps,
			[]string{"link", "add", l.sw, "netns", n.sw, "type", "veth", "peer", "name", l.inside, "netns", h.ns},
			[]string{"-n", n.sw, "link", "set", l.sw, "master", l.bridge, "up"},
			[]string{"-n", h.ns, "addr", "add", l.ip + "/24", "dev", l.inside},
			[]string{"-n", h.ns, "link", "set", l.inside, "up"})
	}
	for _, args := range steps {
		if err := ip(ctx, args...); err != nil {
			return nil, fmt.Errorf("making host %s: %w", h.ns, err)
		}
	}
	return h, nil
}

// peerLink is the switch's end of the host's peer link.
func (h *host) peerLink() string { return "p" + strconv.Itoa(h.index) }

// cut takes the host off the peer bridge: its etcd member neither reaches
// its peers nor is reached by them; its clients still reach it.
func (h *host) cut(ctx context.Context) error {
	return ip(ctx, "-n", h.net.sw, "link", "set", h.peerLink(), "down")
}

// heal puts the host back on the peer bridge.
func (h *host) heal(ctx context.Context) error {
	return ip(ctx, "-n", h.net.sw, "link", "set", h.peerLink(), "up")
}

// command is name run on the host.
func (h *host) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// close removes the network's namespaces (their links go with them). The
// processes on the hosts must have ended.
func (n *network) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.hosts {
		ip(context.Background(), "netns", "del", h.ns) //nolint:errcheck // best effort: removeStaleNamespaces tries again
	}
	ip(context.Background(), "netns", "del", n.sw) //nolint:errcheck // as above
}

// dial connects from the switch namespace, where the run's clients are:
// the socket is made on a thread moved into that namespace for the call.
// The thread goes back to the process's namespace before it serves other
// goroutines; it is never left to end, for the processes the run starts
// are killed when the thread that started them ends (Pdeathsig).
func (n *network) dial(ctx context.Context, network, address string) (net.Conn, error) {
	root, err := rootNamespace()
	if err != nil {
		return nil, err
	}
	sw, err := os.Open(filepath.Join("/run/netns", n.sw))
	if err != nil {
		return nil, err
	}
	defer sw.Close() //nolint:errcheck
	runtime.LockOSThread()
	if err := unix.Setns(int(sw.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering %s: %w", n.sw, err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, address)
	if err := unix.Setns(int(root.Fd()), unix.CLONE_NEWNET); err != nil {
		// Unusable for others: the thread stays locked, and ends with
		// the goroutine.
		panic(fmt.Sprintf("leaving %s: %v", n.sw, err))
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}

// rootNamespace is the process's own network namespace, opened before any
// thread left it.
var rootNamespace = sync.OnceValues(func() (*os.File, error) {
	return os.Open("/proc/thread-self/ns/net")
})

// ip runs iproute2's ip.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeStaleNamespaces removes the namespaces of runs whose process has
// gone (a run killed before its teardown).
func removeStaleNamespaces(ctx context.Context) error {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), nsPrefix)
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		if err := ip(ctx, "netns", "del", e.Name()); err != nil {
			return err
		}
	}
	return nil
}
