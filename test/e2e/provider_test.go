package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Provider is the infrastructure under test: how a control plane is started,
// stopped and restarted. The tests of this suite are written against it
// alone, so the same suite can run against another way of deploying the
// control plane (a container, a VM, a service manager) by adding a provider,
// as in the "modular CCM testing" pattern.
//
// A provider declares the actions it can take (Can); a spec that needs an
// action its provider lacks is skipped with the reason (requireActions),
// never passed silently. Methods for an action a provider lacks return an
// error saying so.
type Provider interface {
	// Name names the provider in test names, e.g. "binary".
	Name() string
	// Can reports whether the provider can take action a.
	Can(a Action) bool
	// Start starts a control plane described by spec and returns once it
	// serves and has printed its kubeconfig. When the control plane ends
	// before that, the error wraps an *ExitError.
	Start(ctx context.Context, spec Spec) (*Cluster, error)
	// Stop stops the control plane (one replica of it, c) gracefully
	// (SIGTERM for a process) and fails unless it ends cleanly (exit code
	// 0) in time.
	Stop(ctx context.Context, c *Cluster) error
	// Restart stops the control plane like Stop, then starts it again with
	// the same data dir, port and flags. After Kill (or Stop) it only
	// starts it again: that is how a spec brings back a control plane it
	// crashed (or stopped).
	Restart(ctx context.Context, c *Cluster) error
	// Kill ends the control plane (one replica of it, c) at once, without
	// asking. It is safe to call on a stopped control plane and more than
	// once; Restart starts it again.
	Kill(c *Cluster)
	// Teardown ends everything Start started for c: every replica at once,
	// and whatever the provider runs beside them (an etcd cluster). It is
	// safe to call more than once.
	Teardown(c *Cluster)
}

// Action is something a spec may need a provider to do.
type Action string

const (
	// ActionStart starts new control planes with the spec's flags and data
	// dir (a provider given an existing cluster has one control plane).
	ActionStart Action = "start a control plane of the test's own"
	// ActionRestart stops a control plane gracefully and starts it again.
	ActionRestart Action = "stop and restart a control plane"
	// ActionKill ends a control plane's process at once (SIGKILL).
	ActionKill Action = "kill a control plane's process"
	// ActionLogs reads the control plane's own log (Cluster.StderrPath).
	ActionLogs Action = "read the control plane's log"
	// ActionEtcdMembers stops and starts the members of the etcd cluster
	// the control plane runs on (EtcdMembers).
	ActionEtcdMembers Action = "stop and start etcd members"
	// ActionReplicas runs more than one replica of the control plane
	// (Cluster.Replicas).
	ActionReplicas Action = "run replicas of the control plane"
	// ActionEtcdClient: the test reaches the etcd cluster the control
	// plane runs on as a client does (EtcdClients), to run the binary's
	// snapshot and etcd commands against it.
	ActionEtcdClient Action = "reach the control plane's etcd cluster as a client"
	// ActionReachTestHost: the control plane runs on the test's host and
	// connects to servers the test starts on its loopback, as it must to
	// reach an aggregated API server or a webhook the test runs. A control
	// plane elsewhere (a VM, another machine) would dial its own loopback.
	ActionReachTestHost Action = "reach servers on the test's loopback"
)

// EtcdMembers is a provider whose control planes run on an etcd cluster it
// started, whose members it can stop and start (ActionEtcdMembers).
type EtcdMembers interface {
	// Members is how many members c's etcd cluster has.
	Members(c *Cluster) int
	// StopMember stops member i of c's etcd cluster gracefully.
	StopMember(ctx context.Context, c *Cluster, i int) error
	// StartMember starts member i of c's etcd cluster again, on its data,
	// and returns once its process runs and listens for its peers, not
	// once it serves clients: a member serves only with a quorum, which
	// may need members started after it.
	StartMember(ctx context.Context, c *Cluster, i int) error
}

// EtcdClients is a provider whose control planes run on an etcd cluster
// that the test reaches as a client (ActionEtcdClient).
type EtcdClients interface {
	// EtcdAccess is how to reach c's etcd cluster.
	EtcdAccess(c *Cluster) (EtcdAccess, error)
}

// EtcdAccess is what a client needs to reach an etcd cluster: its
// members' client URLs and the TLS files.
type EtcdAccess struct {
	// Endpoints are the members' client URLs, member i's at i.
	Endpoints []string
	// CAFile verifies the members' certificates; CertFile and KeyFile are
	// a client certificate they accept.
	CAFile, CertFile, KeyFile string
}

// Flags are the flags with which the control plane and the binary's etcd
// commands reach every member: --etcd-servers and the TLS files.
func (a EtcdAccess) Flags() []string { return a.flags(a.Endpoints...) }

// MemberFlags are Flags for member i alone, as "snapshot save" takes them.
func (a EtcdAccess) MemberFlags(i int) []string { return a.flags(a.Endpoints[i]) }

func (a EtcdAccess) flags(endpoints ...string) []string {
	return []string{"--etcd-servers=" + strings.Join(endpoints, ","), "--etcd-cafile=" + a.CAFile, "--etcd-certfile=" + a.CertFile, "--etcd-keyfile=" + a.KeyFile}
}

// sharedEtcdOn is p's shared control plane (sharedOn) and how to reach the
// etcd cluster it runs on; it skips t unless p can (ActionEtcdClient). A
// spec of the binary's etcd commands runs them with its Flags, e.g.
//
//	c, etcd := sharedEtcdOn(t, p)
//	res := runBinary(t, append([]string{"etcd", "status"}, etcd.Flags()...)...)
func sharedEtcdOn(t *testing.T, p Provider) (*Cluster, EtcdAccess) {
	t.Helper()
	requireActions(t, p, ActionEtcdClient)
	c := sharedOn(t, p)
	access, err := p.(EtcdClients).EtcdAccess(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, access
}

// requireActions skips t, saying why, unless p can take every action.
func requireActions(t *testing.T, p Provider, actions ...Action) {
	t.Helper()
	for _, a := range actions {
		if !p.Can(a) {
			t.Skipf("provider %s cannot %s", p.Name(), a)
		}
	}
}

// Spec describes a control plane to start.
type Spec struct {
	// WorkDir holds the logs and anything else the provider keeps.
	WorkDir string
	// DataDir is passed as --data-dir; empty means WorkDir/data.
	DataDir string
	// Port is passed as --secure-port; zero means a free loopback port.
	Port int
	// BindAddress is passed as --bind-address, an address of 127.0.0.0/8;
	// empty means 127.0.0.1. Providers that run the binary honour it.
	BindAddress string
	// Flags are further flags, after the ones above (so they may override them).
	Flags []string
}

// Cluster is a control plane started by a Provider.
type Cluster struct {
	// WorkDir is Spec.WorkDir.
	WorkDir string
	// DataDir is the control plane's --data-dir.
	DataDir string
	// Port is the control plane's --secure-port.
	Port int
	// BindAddress is the control plane's --bind-address when it runs the
	// binary; empty means 127.0.0.1.
	BindAddress string
	// Kubeconfig is the path the control plane printed after "export KUBECONFIG=".
	Kubeconfig string
	// URL is the API server's URL, read from Kubeconfig.
	URL string
	// StdoutPath and StderrPath hold the output of the current (or last)
	// run; empty when the provider cannot read the logs (ActionLogs).
	StdoutPath, StderrPath string
	// Replicas are every replica of the control plane, c itself first, when
	// the provider runs several (ActionReplicas); nil otherwise. Each is a
	// Cluster of its own, to Stop, Restart or Kill alone.
	Replicas []*Cluster

	flags []string
	// impl is the provider's own state of the running control plane.
	impl any
	// infra is the provider's own state of what it runs beside the
	// control plane (an etcd cluster), shared by its replicas.
	infra any
}

// ExitError is a control plane that ended on its own, or with an exit code
// other than 0 when stopped.
type ExitError struct {
	// Code is the exit code; -1 when the process was ended by a signal.
	Code int
	// Stderr is everything the control plane wrote to stderr.
	Stderr string
	// StderrPath is the file Stderr was read from.
	StderrPath string
	// Command is how the control plane was started, for messages.
	Command string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s: exit code %d; last lines of stderr (%s):\n%s", e.Command, e.Code, e.StderrPath, tail(e.Stderr, logTailLines))
}

// LastStderrLine is the last non-empty line the control plane wrote to stderr.
func (e *ExitError) LastStderrLine() string {
	lines := strings.Split(strings.TrimRight(e.Stderr, "\n"), "\n")
	return lines[len(lines)-1]
}

const (
	// logTailLines is how much of a control plane's log a failure shows.
	logTailLines = 40
	// stopTimeout bounds a graceful stop, including the wait after a kill.
	stopTimeout = 30 * time.Second
)

// startCluster starts a control plane for one test, with its files under a
// new t.TempDir(). It is killed when the test ends, and its log tail is
// printed if the test failed.
func startCluster(t *testing.T, spec Spec) *Cluster {
	t.Helper()
	return startClusterWith(t, provider, spec)
}

// startClusterWith is startCluster with provider p.
func startClusterWith(t *testing.T, p Provider, spec Spec) *Cluster {
	t.Helper()
	if spec.WorkDir == "" {
		spec.WorkDir = t.TempDir()
	}
	c, err := p.Start(t.Context(), spec)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		p.Teardown(c)
		for _, r := range c.Replicas {
			logTailOnFailure(t, r)
		}
		if c.Replicas == nil {
			logTailOnFailure(t, c)
		}
		if etcd, ok := c.infra.(*etcdCluster); ok && t.Failed() {
			etcd.logTails(t)
		}
	})
	return c
}

// startExpectingFailure starts a control plane that must end on its own
// within timeout, and returns how it ended.
func startExpectingFailure(t *testing.T, spec Spec, timeout time.Duration) *ExitError {
	t.Helper()
	if spec.WorkDir == "" {
		spec.WorkDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	c, err := provider.Start(ctx, spec)
	if err == nil {
		provider.Kill(c)
		t.Fatalf("control plane with flags %q started and served at %s; want it to exit with an error", spec.Flags, c.URL)
	}
	var exitErr *ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("control plane did not exit on its own within %s (after %s): %v", timeout, time.Since(start).Round(time.Millisecond), err)
	}
	return exitErr
}

// logTailOnFailure prints the end of the control plane's logs when t failed.
func logTailOnFailure(t *testing.T, c *Cluster) {
	if !t.Failed() {
		return
	}
	for _, path := range []string{c.StdoutPath, c.StderrPath} {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Logf("control plane log %s: %v", path, err)
			continue
		}
		t.Logf("last lines of control plane log %s:\n%s", path, tail(string(data), logTailLines))
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
