package e2e

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
)

// externalKubeconfigEnv names the kubeconfig of the control plane the
// external provider runs the specs against.
const externalKubeconfigEnv = "SGCP_E2E_KUBECONFIG"

// externalProvider is a control plane that runs already, anywhere, given by
// a kubeconfig (docs/testing.md). It takes no infrastructure actions: every
// spec runs on that one control plane, and the specs that need to start,
// stop, kill or break something are skipped.
type externalProvider struct {
	kubeconfig string
}

var _ Provider = (*externalProvider)(nil)

func (p *externalProvider) Name() string { return "external" }

func (p *externalProvider) Can(Action) bool { return false }

// Start returns the control plane of the kubeconfig. A spec with flags or a
// data dir asks for a control plane of its own, which this provider cannot
// give.
func (p *externalProvider) Start(_ context.Context, spec Spec) (*Cluster, error) {
	if len(spec.Flags) > 0 || spec.DataDir != "" || spec.Port != 0 {
		return nil, fmt.Errorf("provider %s cannot %s (flags %q, data dir %q, port %d)", p.Name(), ActionStart, spec.Flags, spec.DataDir, spec.Port)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: p.kubeconfig}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("$%s=%s: %w", externalKubeconfigEnv, p.kubeconfig, err)
	}
	return &Cluster{WorkDir: spec.WorkDir, Kubeconfig: p.kubeconfig, URL: cfg.Host}, nil
}

func (p *externalProvider) Stop(context.Context, *Cluster) error {
	return fmt.Errorf("provider %s cannot %s", p.Name(), ActionRestart)
}

func (p *externalProvider) Restart(context.Context, *Cluster) error {
	return fmt.Errorf("provider %s cannot %s", p.Name(), ActionRestart)
}

// Kill and Teardown leave the control plane running: it is not ours.
func (p *externalProvider) Kill(*Cluster)     {}
func (p *externalProvider) Teardown(*Cluster) {}
