package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// readyLinePrefix starts the line the binary prints on stdout once it serves.
const readyLinePrefix = "  export KUBECONFIG="

// binaryProvider runs the sample-generic-controlplane binary as a child
// process on loopback.
type binaryProvider struct {
	// binary is the path of sample-generic-controlplane.
	binary string
	// startTimeout bounds the wait for the ready line.
	startTimeout time.Duration
}

var _ Provider = (*binaryProvider)(nil)

func (p *binaryProvider) Name() string { return "binary" }

// Can: everything a single process on a data dir of its own allows.
func (p *binaryProvider) Can(a Action) bool {
	switch a {
	case ActionStart, ActionRestart, ActionKill, ActionLogs, ActionReachTestHost:
		return true
	}
	return false
}

func (p *binaryProvider) Teardown(c *Cluster) { p.Kill(c) }

// binaryRun is one run of the binary.
type binaryRun struct {
	cmd      *exec.Cmd
	stdout   *os.File
	stderr   *os.File
	done     chan struct{} // closed when the process has exited
	closeLog sync.Once
	// killed is set by kill, and stopped by Stop: the run ended
	// because a test ended it, so Restart starts it again instead of
	// reporting an unexpected exit.
	killed, stopped bool
}

func (p *binaryProvider) Start(ctx context.Context, spec Spec) (*Cluster, error) {
	c := &Cluster{WorkDir: spec.WorkDir, DataDir: spec.DataDir, Port: spec.Port, BindAddress: spec.BindAddress, flags: spec.Flags}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(spec.WorkDir, "data")
	}
	if c.Port == 0 {
		port, err := freePortOn(c.bindAddress())
		if err != nil {
			return nil, err
		}
		c.Port = port
	}
	if err := p.launch(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *binaryProvider) Stop(ctx context.Context, c *Cluster) error {
	r, ok := c.impl.(*binaryRun)
	if !ok {
		return errors.New("control plane was not started")
	}
	select {
	case <-r.done:
		return fmt.Errorf("control plane had exited before it was stopped: %w", r.exitError(c))
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %w", err)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
		r.kill()
		return fmt.Errorf("control plane still running %s after SIGTERM; killed it", stopTimeout)
	case <-ctx.Done():
		r.kill()
		return fmt.Errorf("waiting for the control plane to stop: %w", ctx.Err())
	}
	// Ended as asked, cleanly or not: Restart starts it again.
	r.stopped = true
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("control plane stopped by SIGTERM: %w", r.exitError(c))
	}
	return nil
}

func (p *binaryProvider) Restart(ctx context.Context, c *Cluster) error {
	if r, ok := c.impl.(*binaryRun); ok && (r.killed || r.stopped) {
		return p.launch(ctx, c)
	}
	if err := p.Stop(ctx, c); err != nil {
		return err
	}
	return p.launch(ctx, c)
}

func (p *binaryProvider) Kill(c *Cluster) {
	if r, ok := c.impl.(*binaryRun); ok {
		r.kill()
	}
}

// launch runs the binary for c and waits for its ready line.
func (p *binaryProvider) launch(ctx context.Context, c *Cluster) error {
	r, ready, err := p.spawn(c)
	if err != nil {
		return err
	}
	return p.awaitReady(ctx, c, r, ready)
}

// spawn runs the binary for c, with its output in new log files, and
// returns at once; the path of the kubeconfig it prints once ready is sent
// on ready.
func (p *binaryProvider) spawn(c *Cluster) (*binaryRun, <-chan string, error) {
	run := 1
	for {
		c.StdoutPath = filepath.Join(c.WorkDir, fmt.Sprintf("stdout-%d.log", run))
		if _, err := os.Stat(c.StdoutPath); errors.Is(err, os.ErrNotExist) {
			break
		}
		run++
	}
	c.StderrPath = filepath.Join(c.WorkDir, fmt.Sprintf("stderr-%d.log", run))
	stdout, err := os.Create(c.StdoutPath)
	if err != nil {
		return nil, nil, err
	}
	stderr, err := os.Create(c.StderrPath)
	if err != nil {
		stdout.Close() //nolint:errcheck
		return nil, nil, err
	}

	args := append([]string{
		"--data-dir=" + c.DataDir,
		"--secure-port=" + strconv.Itoa(c.Port),
		"--bind-address=" + c.bindAddress(),
	}, c.flags...)
	// Not CommandContext: the control plane outlives ctx, which only bounds the start.
	cmd := exec.Command(p.binary, args...)
	ready := make(chan string, 1)
	cmd.Stdout = io.MultiWriter(stdout, &lineWatcher{prefix: readyLinePrefix, found: ready})
	cmd.Stderr = stderr
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		stdout.Close() //nolint:errcheck
		stderr.Close() //nolint:errcheck
		return nil, nil, fmt.Errorf("running %s: %w", p.binary, err)
	}
	r := &binaryRun{cmd: cmd, stdout: stdout, stderr: stderr, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // the exit code is read from cmd.ProcessState
		r.closeLogs()
		close(r.done)
	}()
	c.impl = r
	return r, ready, nil
}

// awaitReady waits for run r of c to print its ready line, and reads the
// kubeconfig it names.
func (p *binaryProvider) awaitReady(ctx context.Context, c *Cluster, r *binaryRun, ready <-chan string) error {
	timer := time.NewTimer(p.startTimeout)
	defer timer.Stop()
	var kubeconfig string
	select {
	case kubeconfig = <-ready:
	case <-r.done:
		return fmt.Errorf("control plane exited before it was ready: %w", r.exitError(c))
	case <-timer.C:
		r.kill()
		// %v, not %w: the process did not end on its own.
		return fmt.Errorf("control plane printed no %q line within %s; killed it: %v", strings.TrimSpace(readyLinePrefix), p.startTimeout, r.exitError(c))
	case <-ctx.Done():
		r.kill()
		return fmt.Errorf("waiting for the control plane to be ready: %w; killed it: %v", ctx.Err(), r.exitError(c))
	}

	c.Kubeconfig = kubeconfig
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		r.kill()
		return fmt.Errorf("reading the printed kubeconfig: %w", err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil {
		r.kill()
		return fmt.Errorf("kubeconfig %s: current context %q names no cluster", kubeconfig, cfg.CurrentContext)
	}
	c.URL = cfg.Clusters[kctx.Cluster].Server
	return nil
}

// kill ends the process, if it still runs, and waits until it has.
func (r *binaryRun) kill() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill() // fails only when it has exited already
	<-r.done
	r.killed = true
}

func (r *binaryRun) closeLogs() {
	r.closeLog.Do(func() {
		r.stdout.Close() //nolint:errcheck
		r.stderr.Close() //nolint:errcheck
	})
}

// exitError describes how the run ended; call it after the process exited
// (it reads the exit code) or to report its stderr so far.
func (r *binaryRun) exitError(c *Cluster) *ExitError {
	e := &ExitError{Code: -1, StderrPath: c.StderrPath, Command: strings.Join(r.cmd.Args, " ")}
	select {
	case <-r.done:
		e.Code = r.cmd.ProcessState.ExitCode()
	default:
	}
	data, err := os.ReadFile(c.StderrPath)
	if err != nil {
		data = []byte(err.Error())
	}
	e.Stderr = string(data)
	return e
}

// lineWatcher sends the rest of the first line that starts with prefix to
// found, and discards everything else. It never blocks the writer.
type lineWatcher struct {
	prefix string
	found  chan<- string
	buf    []byte
	sent   bool
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, w.prefix); ok {
			w.found <- rest
			w.sent, w.buf = true, nil
			return len(p), nil
		}
	}
}

// bindAddress is the control plane's --bind-address: 127.0.0.1 unless the
// provider chose another loopback address.
func (c *Cluster) bindAddress() string {
	if c.BindAddress == "" {
		return defaultBindAddress
	}
	return c.BindAddress
}

// defaultBindAddress is where the binary's control planes serve.
const defaultBindAddress = "127.0.0.1"

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	return freePortOn(defaultBindAddress)
}

// freePortOn returns a port of address ip that was free a moment ago.
func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
