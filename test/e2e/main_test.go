// Package e2e tests the built sample-generic-controlplane binary end to end:
// it runs the binary and kubectl as subprocesses, as a user would.
//
// The binaries come from $SGCP_BINARY, $SGCP_KUBECTL, $SGCP_ETCD and
// $SGCP_SAMPLE_APISERVER (make sets them); when unset, the suite builds them
// from this module. The control
// plane is started through a Provider (see provider_test.go). The specs that
// hold on any deployment run on every provider in $SGCP_E2E_PROVIDERS
// (onEveryProvider); the tests of the binary itself (its flags, logs and
// subcommands) run on binaryProvider, which runs the binary on loopback.
// docs/testing.md says how to run the suite against a cluster of your own.
package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	binaryEnv  = "SGCP_BINARY"
	kubectlEnv = "SGCP_KUBECTL"
	etcdEnv    = "SGCP_ETCD"
	// providersEnv lists the providers the specs run on, by name.
	providersEnv = "SGCP_E2E_PROVIDERS"
	// defaultProviders are those of make test: the ones that need nothing
	// but this module.
	defaultProviders = "inprocess,binary"

	binaryPackage  = "sigs.k8s.io/sample-generic-controlplane/cmd/sample-generic-controlplane"
	kubectlPackage = "k8s.io/kubernetes/cmd/kubectl"
	etcdPackage    = "go.etcd.io/etcd/server/v3"

	// readyTimeout bounds how long a control plane may take to print its kubeconfig.
	readyTimeout = 60 * time.Second
)

var (
	// provider is the binary provider: it starts and stops the control
	// planes of the tests of the binary itself.
	provider Provider
	// providers are those the specs run on, in the order of $SGCP_E2E_PROVIDERS.
	providers []Provider
	// kubectlBinary is the kubectl built from the pinned k8s.io/kubernetes.
	kubectlBinary string
	// shared holds each provider's control plane for the specs that need
	// none of their own, by provider name.
	shared = map[string]*sharedControlPlane{}
	// sharedDir holds the shared control planes' work dirs.
	sharedDir string
	// exampleBinDir holds the examples' binaries, built on first use.
	exampleBinDir string
)

// sharedControlPlane is a provider's control plane shared by the specs that
// only read or add objects of their own, started by the first of them.
type sharedControlPlane struct {
	once    sync.Once
	cluster *Cluster
	// err is why it did not start.
	err error
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "sgcp-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp) //nolint:errcheck // best effort

	names := strings.Split(cmp.Or(os.Getenv(providersEnv), defaultProviders), ",")
	exampleBinDir = filepath.Join(tmp, "bin")
	bins, err := binaries(exampleBinDir, slices.Contains(names, "external-etcd"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectlBinary = bins.kubectl
	binary := &binaryProvider{binary: bins.controlPlane, startTimeout: readyTimeout}
	provider = binary
	if providers, err = newProviders(names, binary, bins.etcd); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	sharedDir = filepath.Join(tmp, "shared")
	code := m.Run()
	// The shared control planes have served every test; each must still
	// stop cleanly.
	for _, p := range append([]Provider{provider}, providers...) {
		s := shared[p.Name()]
		if s == nil || s.cluster == nil {
			continue
		}
		if p.Can(ActionRestart) {
			if err := p.Stop(context.Background(), s.cluster); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the shared control plane of provider %s: %v\n", p.Name(), err)
				code = cmp.Or(code, 1)
			}
		}
		p.Teardown(s.cluster)
		s.cluster = nil
	}
	return code
}

// newProviders returns the providers named, in order.
func newProviders(names []string, binary *binaryProvider, etcd string) ([]Provider, error) {
	var ps []Provider
	for _, name := range names {
		switch name {
		case "inprocess":
			ps = append(ps, inprocessProvider{})
		case "binary":
			ps = append(ps, binary)
		case "external-etcd":
			ps = append(ps, &externalEtcdProvider{binary: binary, etcd: etcd, members: 3, replicas: 2})
		case "joined":
			ps = append(ps, &joinedProvider{binary: binary, servers: 3})
		case "external":
			kubeconfig := os.Getenv(externalKubeconfigEnv)
			if kubeconfig == "" {
				return nil, fmt.Errorf("$%s names provider external: set $%s to the kubeconfig of the control plane to test (docs/testing.md)", providersEnv, externalKubeconfigEnv)
			}
			ps = append(ps, &externalProvider{kubeconfig: kubeconfig})
		default:
			return nil, fmt.Errorf("$%s: unknown provider %q; write a comma-separated list of inprocess, binary, external-etcd, joined and external", providersEnv, name)
		}
	}
	return ps, nil
}

// builtBinaries are the programs the suite runs.
type builtBinaries struct {
	controlPlane, kubectl, etcd string
}

// binaries returns the programs named by the environment, and builds the
// others into dir; etcd only when withEtcd.
func binaries(dir string, withEtcd bool) (builtBinaries, error) {
	bins := builtBinaries{controlPlane: os.Getenv(binaryEnv), kubectl: os.Getenv(kubectlEnv), etcd: os.Getenv(etcdEnv)}
	ldflags, err := kubeVersionLDFlags()
	if err != nil {
		return bins, err
	}
	type build struct{ name, pkg, ldflags string }
	builds := map[*string]build{}
	if bins.controlPlane == "" {
		stamp, err := gitLDFlags()
		if err != nil {
			return bins, err
		}
		builds[&bins.controlPlane] = build{"sample-generic-controlplane", binaryPackage, ldflags + " " + stamp}
	}
	if bins.kubectl == "" {
		builds[&bins.kubectl] = build{"kubectl", kubectlPackage, ldflags}
	}
	if withEtcd && bins.etcd == "" {
		builds[&bins.etcd] = build{"etcd", etcdPackage, ""}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(builds))
	for out, b := range builds {
		*out = filepath.Join(dir, b.name)
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-ldflags", b.ldflags, "-o", *out, b.pkg)
			if output, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("go build -o %s %s: %w\n%s", *out, b.pkg, err, output)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return bins, err
	}
	for env, path := range map[string]string{binaryEnv: bins.controlPlane, kubectlEnv: bins.kubectl, etcdEnv: bins.etcd} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return bins, fmt.Errorf("%s: %w", env, err)
		}
	}
	return bins, nil
}

// sharedCluster is the binary's control plane for the tests that only read
// or add objects of their own.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	return sharedOn(t, provider)
}

// sharedOn is p's control plane for the specs that only read or add objects
// of their own; the first call starts it and TestMain stops it. Its log
// tail is printed when the test fails.
func sharedOn(t *testing.T, p Provider) *Cluster {
	t.Helper()
	s := shared[p.Name()]
	if s == nil {
		s = &sharedControlPlane{}
		shared[p.Name()] = s
	}
	s.once.Do(func() {
		dir := filepath.Join(sharedDir, p.Name())
		if s.err = os.MkdirAll(dir, 0o700); s.err != nil {
			return
		}
		// Not t.Context(): the control plane outlives this test.
		s.cluster, s.err = p.Start(context.Background(), Spec{WorkDir: dir})
	})
	if s.err != nil {
		t.Fatalf("starting the shared control plane of provider %s: %v", p.Name(), s.err)
	}
	t.Cleanup(func() { logTailOnFailure(t, s.cluster) })
	return s.cluster
}

// onEveryProvider runs spec as a subtest named after each provider of
// $SGCP_E2E_PROVIDERS, on its shared control plane. Specs that run there
// create what they need under names of their own and delete it.
func onEveryProvider(t *testing.T, spec func(t *testing.T, c *Cluster)) {
	t.Helper()
	for _, p := range providers {
		t.Run(p.Name(), func(t *testing.T) { spec(t, sharedOn(t, p)) })
	}
}

// forEveryProvider runs spec as a subtest named after each provider of
// $SGCP_E2E_PROVIDERS, for specs that start control planes of their own
// (which call requireActions first).
func forEveryProvider(t *testing.T, spec func(t *testing.T, p Provider)) {
	t.Helper()
	for _, p := range providers {
		t.Run(p.Name(), func(t *testing.T) { spec(t, p) })
	}
}

// kubeVersionLDFlags stamps a build with the version of the pinned
// k8s.io/kubernetes module, as the Makefile does.
func kubeVersionLDFlags() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/kubernetes: %w", err)
	}
	v := strings.TrimSpace(string(out))
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return "", fmt.Errorf("k8s.io/kubernetes has version %q, want vMAJOR.MINOR.PATCH", v)
	}
	const pkg = "k8s.io/component-base/version."
	return fmt.Sprintf("-X %sgitVersion=%s -X %sgitMajor=1 -X %sgitMinor=%s", pkg, v, pkg, pkg, parts[1]), nil
}

// gitLDFlags stamps a build with the commit of the checkout, its tree state
// and the commit's time, as the Makefile does (make build).
func gitLDFlags() (string, error) {
	want, err := checkoutVersion()
	if err != nil {
		return "", err
	}
	const pkg = "k8s.io/component-base/version."
	return fmt.Sprintf("-X %sgitCommit=%s -X %sgitTreeState=%s -X %sbuildDate=%s", pkg, want.GitCommit, pkg, want.GitTreeState, pkg, want.BuildDate), nil
}

// stamp is what /version says of the build.
type stamp struct{ GitCommit, GitTreeState, BuildDate string }

// checkoutVersion is the stamp a build of this checkout carries: HEAD, clean
// or dirty as git status says, and HEAD's commit time in UTC.
func checkoutVersion() (stamp, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "TZ=UTC")
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var s stamp
	var err error
	if s.GitCommit, err = git("rev-parse", "HEAD"); err != nil {
		return s, err
	}
	status, err := git("status", "--porcelain")
	if err != nil {
		return s, err
	}
	s.GitTreeState = "clean"
	if status != "" {
		s.GitTreeState = "dirty"
	}
	s.BuildDate, err = git("log", "-1", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%cd")
	return s, err
}
