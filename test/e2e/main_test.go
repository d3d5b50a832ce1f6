// Package e2e tests the built sample-generic-controlplane binary end to end:
// it runs the binary and kubectl as subprocesses, as a user would.
//
// The binaries come from $SGCP_BINARY and $SGCP_KUBECTL (make test sets
// them); when unset, TestMain builds them from this module. The control
// plane is started through a Provider (see provider_test.go); binaryProvider
// runs the binary on loopback.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	binaryEnv  = "SGCP_BINARY"
	kubectlEnv = "SGCP_KUBECTL"

	binaryPackage  = "sigs.k8s.io/sample-generic-controlplane/cmd/sample-generic-controlplane"
	kubectlPackage = "k8s.io/kubernetes/cmd/kubectl"

	// readyTimeout bounds how long a control plane may take to print its kubeconfig.
	readyTimeout = 60 * time.Second
)

var (
	// provider starts and stops the control planes of every test.
	provider Provider
	// kubectlBinary is the kubectl built from the pinned k8s.io/kubernetes.
	kubectlBinary string
	// shared is the control plane of the tests that need none of their own,
	// started by the first of them; sharedErr is why it did not start.
	shared        *Cluster
	sharedErr     error
	sharedOnce    sync.Once
	sharedWorkDir string
	// exampleBinDir holds the examples' binaries, built on first use.
	exampleBinDir string
)

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

	exampleBinDir = filepath.Join(tmp, "bin")
	binary, kubectl, err := binaries(exampleBinDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubectlBinary = kubectl
	provider = &binaryProvider{binary: binary, startTimeout: readyTimeout}

	sharedWorkDir = filepath.Join(tmp, "shared")
	defer func() {
		if shared != nil {
			provider.Kill(shared)
		}
	}()

	code := m.Run()
	if shared == nil {
		return code
	}
	// The shared control plane has served every test; it must still stop cleanly.
	if err := provider.Stop(context.Background(), shared); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the shared control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// binaries returns the control plane and kubectl binaries: those named by
// the environment, or ones built into dir.
func binaries(dir string) (binary, kubectl string, err error) {
	binary, kubectl = os.Getenv(binaryEnv), os.Getenv(kubectlEnv)
	builds := map[string]string{} // output path → package
	if binary == "" {
		binary = filepath.Join(dir, "sample-generic-controlplane")
		builds[binary] = binaryPackage
	}
	if kubectl == "" {
		kubectl = filepath.Join(dir, "kubectl")
		builds[kubectl] = kubectlPackage
	}
	ldflags, err := kubeVersionLDFlags()
	if err != nil {
		return "", "", err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(builds))
	for out, pkg := range builds {
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg)
			if output, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("go build -o %s %s: %w\n%s", out, pkg, err, output)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", "", err
	}
	for env, path := range map[string]string{binaryEnv: binary, kubectlEnv: kubectl} {
		if _, err := os.Stat(path); err != nil {
			return "", "", fmt.Errorf("%s: %w", env, err)
		}
	}
	return binary, kubectl, nil
}

// sharedCluster is the control plane of the tests that only read or add
// objects of their own; the first call starts it and TestMain stops it. Its
// log tail is printed when the test fails.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		if sharedErr = os.Mkdir(sharedWorkDir, 0o700); sharedErr != nil {
			return
		}
		// Not t.Context(): the control plane outlives this test.
		c, err := provider.Start(context.Background(), Spec{WorkDir: sharedWorkDir})
		if err != nil {
			sharedErr = err
			return
		}
		shared = c
	})
	if sharedErr != nil {
		t.Fatalf("starting the shared control plane: %v", sharedErr)
	}
	t.Cleanup(func() { logTailOnFailure(t, shared) })
	return shared
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
