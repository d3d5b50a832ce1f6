package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// joinedProvider runs a control plane highly available with nothing but the
// binary (docs/user-guide.md, "High availability"): servers on
// 127.0.0.1, 127.0.0.2, …, each with its embedded etcd member; the first
// starts with --cluster-init, the others --join it with a token. Their
// members form one etcd cluster, so stopping server i stops member i
// (EtcdMembers), and the servers elect the controllers' leader among
// themselves. Linux routes all of 127.0.0.0/8 to loopback, so every server
// has an address of its own, as on machines of their own.
type joinedProvider struct {
	// binary starts, stops and kills the servers.
	binary *binaryProvider
	// servers is how many servers each cluster has.
	servers int
}

var (
	_ Provider    = (*joinedProvider)(nil)
	_ EtcdMembers = (*joinedProvider)(nil)
)

func (p *joinedProvider) Name() string { return "joined" }

func (p *joinedProvider) Can(a Action) bool {
	switch a {
	case ActionStart, ActionRestart, ActionKill, ActionLogs, ActionEtcdMembers, ActionReplicas, ActionReachTestHost:
		return true
	}
	return false
}

// joinedCluster is what the servers of one cluster share (Cluster.infra).
type joinedCluster struct {
	// servers are the servers in the order they were started: the first
	// initialised the cluster.
	servers []*Cluster
	// joinTimes are, for each server but the first, the time from the
	// start of its process with --join to its ready line.
	joinTimes []time.Duration
}

// joinTokenTTL is how long the tokens the provider creates last: long
// enough for the joins of one start, and no longer.
const joinTokenTTL = 10 * time.Minute

// serverAddress is the loopback address of the cluster's server i.
func serverAddress(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }

// Start starts the first server with --cluster-init, creates a join token
// on it and starts the others, one after the other, with --join and the
// token. The Cluster returned is the first server; c.Replicas has them all.
// Later starts of a server (Restart, StartMember) run without --join,
// --token and --cluster-init, as a user runs them: the data dir keeps the
// member's place.
func (p *joinedProvider) Start(ctx context.Context, spec Spec) (c *Cluster, err error) {
	jc := &joinedCluster{}
	defer func() {
		if err != nil {
			for _, s := range jc.servers {
				p.binary.Kill(s)
			}
		}
	}()
	first, err := p.startServer(ctx, spec, 0, []string{"--cluster-init"})
	if err != nil {
		return nil, fmt.Errorf("server 0 (--cluster-init): %w", err)
	}
	jc.servers = append(jc.servers, first)
	token, err := p.createJoinToken(ctx, first, "--ttl="+joinTokenTTL.String(), "--description=e2e provider joined")
	if err != nil {
		return nil, err
	}
	join := []string{"--join=" + first.URL, "--token=" + token}
	for i := 1; i < p.servers; i++ {
		start := time.Now()
		s, err := p.startServer(ctx, spec, i, join)
		if err != nil {
			return nil, fmt.Errorf("server %d (--join %s): %w", i, first.URL, err)
		}
		jc.joinTimes = append(jc.joinTimes, time.Since(start))
		jc.servers = append(jc.servers, s)
	}
	for _, s := range jc.servers {
		s.Replicas, s.infra = jc.servers, jc
	}
	return first, nil
}

// startServer starts server i of a cluster described by spec, with the
// flags that make it one of the cluster at its first start (once), and
// returns once it is ready.
func (p *joinedProvider) startServer(ctx context.Context, spec Spec, i int, once []string) (*Cluster, error) {
	ip := serverAddress(i)
	workDir := filepath.Join(spec.WorkDir, fmt.Sprintf("server-%d", i))
	if err := os.MkdirAll(workDir, 0o700); err != nil {
		return nil, err
	}
	peerPort, err := freePortOn(ip)
	if err != nil {
		return nil, err
	}
	sspec := Spec{WorkDir: workDir, BindAddress: ip,
		Flags: append([]string{"--etcd-peer-port=" + strconv.Itoa(peerPort)}, spec.Flags...)}
	if i == 0 {
		sspec.DataDir, sspec.Port = spec.DataDir, spec.Port
	}
	sspec.Flags = append(sspec.Flags, once...)
	s, err := p.binary.Start(ctx, sspec)
	if err != nil {
		return nil, err
	}
	s.flags = slices.DeleteFunc(s.flags, func(f string) bool { return slices.Contains(once, f) })
	return s, nil
}

func (p *joinedProvider) Stop(ctx context.Context, c *Cluster) error {
	return p.binary.Stop(ctx, c)
}

func (p *joinedProvider) Restart(ctx context.Context, c *Cluster) error {
	return p.binary.Restart(ctx, c)
}

func (p *joinedProvider) Kill(c *Cluster) { p.binary.Kill(c) }

func (p *joinedProvider) Teardown(c *Cluster) {
	for _, s := range c.Replicas {
		p.binary.Kill(s)
	}
	p.binary.Kill(c)
}

// Members: each server runs one member of the cluster.
func (p *joinedProvider) Members(c *Cluster) int { return len(c.Replicas) }

// StopMember stops server i, and with it its member, gracefully.
func (p *joinedProvider) StopMember(ctx context.Context, c *Cluster, i int) error {
	s, err := p.server(c, i)
	if err != nil {
		return err
	}
	return p.binary.Stop(ctx, s)
}

// StartMember starts server i again and returns once its member listens
// for its peers: the server is ready only once its member is part of a
// quorum, which may need members started after it.
func (p *joinedProvider) StartMember(ctx context.Context, c *Cluster, i int) error {
	s, err := p.server(c, i)
	if err != nil {
		return err
	}
	if r, ok := s.impl.(*binaryRun); ok && r.running() {
		return fmt.Errorf("server %d runs already", i)
	}
	r, _, err := p.binary.spawn(s)
	if err != nil {
		return err
	}
	peer := net.JoinHostPort(s.bindAddress(), strconv.Itoa(peerPortOf(s)))
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, readyTimeout, true, func(context.Context) (bool, error) {
		if !r.running() {
			return false, fmt.Errorf("server %d exited before its member listened for peers on %s: %w", i, peer, r.exitError(s))
		}
		conn, err := net.DialTimeout("tcp", peer, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close() //nolint:errcheck
		return true, nil
	})
}

func (p *joinedProvider) server(c *Cluster, i int) (*Cluster, error) {
	if _, ok := c.infra.(*joinedCluster); !ok {
		return nil, errors.New("control plane was not started by provider joined")
	}
	if i < 0 || i >= len(c.Replicas) {
		return nil, fmt.Errorf("server %d: the cluster has servers 0 to %d", i, len(c.Replicas)-1)
	}
	return c.Replicas[i], nil
}

// peerPortOf is server s's --etcd-peer-port.
func peerPortOf(s *Cluster) int {
	for _, f := range s.flags {
		if v, ok := strings.CutPrefix(f, "--etcd-peer-port="); ok {
			port, _ := strconv.Atoi(v)
			return port
		}
	}
	return 0
}

// running reports whether the run's process has not exited yet.
func (r *binaryRun) running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// createJoinToken creates a join token on the cluster of server s with
// "token create", as a user does, and returns it: it pins the cluster's CA.
// args are further flags (--ttl, --single-use).
func (p *joinedProvider) createJoinToken(ctx context.Context, s *Cluster, args ...string) (string, error) {
	args = append([]string{"token", "create", "--kubeconfig=" + s.Kubeconfig}, args...)
	ctx, cancel := context.WithTimeout(ctx, kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.binary.binary, args...)
	killWithParent(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w; stderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}
