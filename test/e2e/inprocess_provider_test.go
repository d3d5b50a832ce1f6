package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// inprocessProvider runs the control plane inside the test process with
// controlplane/testing, composed as the binary is (kana.Install), as a Go
// test suite that embeds it does. It cannot kill a control plane (there is
// no process of its own to kill), and its log is the test process's.
type inprocessProvider struct{}

var _ Provider = inprocessProvider{}

func (inprocessProvider) Name() string { return "inprocess" }

func (inprocessProvider) Can(a Action) bool {
	switch a {
	case ActionStart, ActionRestart, ActionReachTestHost:
		return true
	}
	return false
}

// inprocessRun is one run of an in-process control plane.
type inprocessRun struct {
	server *cptesting.TestServer
	// killed is set by Kill, after which Restart only starts it again.
	killed bool
}

// Start starts a control plane on a free loopback port; Spec.Port must be
// zero (controlplane/testing chooses the port).
func (p inprocessProvider) Start(ctx context.Context, spec Spec) (*Cluster, error) {
	if spec.Port != 0 {
		return nil, fmt.Errorf("provider %s chooses its own port; Spec.Port must be 0, not %d", p.Name(), spec.Port)
	}
	c := &Cluster{WorkDir: spec.WorkDir, DataDir: spec.DataDir, flags: spec.Flags}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(spec.WorkDir, "data")
	}
	if err := p.launch(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

func (p inprocessProvider) launch(ctx context.Context, c *Cluster) error {
	s, err := cptesting.Start(ctx, nil, cptesting.Options{DataDir: c.DataDir, Flags: c.flags, StartTimeout: readyTimeout, Customize: kana.Install})
	if err != nil {
		return err
	}
	c.impl = &inprocessRun{server: s}
	c.Kubeconfig = s.KubeconfigPath
	c.URL = s.ClientConfig.Host
	return nil
}

func (p inprocessProvider) Stop(_ context.Context, c *Cluster) error {
	r, ok := c.impl.(*inprocessRun)
	if !ok || r.server == nil {
		return errors.New("control plane was not started")
	}
	err := r.server.Stop()
	r.server = nil
	if err != nil {
		return fmt.Errorf("stopping the in-process control plane: %w", err)
	}
	return nil
}

func (p inprocessProvider) Restart(ctx context.Context, c *Cluster) error {
	if r, ok := c.impl.(*inprocessRun); ok && r.killed {
		return p.launch(ctx, c)
	}
	if err := p.Stop(ctx, c); err != nil {
		return err
	}
	return p.launch(ctx, c)
}

// Kill stops the control plane gracefully: a goroutine cannot be killed.
// Specs that need a kill ask for ActionKill, which this provider lacks.
func (p inprocessProvider) Kill(c *Cluster) {
	if r, ok := c.impl.(*inprocessRun); ok && r.server != nil {
		_ = r.server.Stop() // the error is the control plane's, reported by Stop when a test asks
		r.server, r.killed = nil, true
	}
}

func (p inprocessProvider) Teardown(c *Cluster) { p.Kill(c) }
