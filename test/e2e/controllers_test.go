package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/sample-generic-controlplane/test/internal/controllerslease"
)

// The controllers can run as their own process (hyperkube-style) against a
// control plane that runs none in-process.
func TestControllersSubcommand(t *testing.T) {
	bp, ok := provider.(*binaryProvider)
	if !ok {
		t.Fatalf("this test runs the binary's controllers subcommand; the provider is a %T", provider)
	}
	c := startCluster(t, Spec{Flags: []string{"--controllers="}})
	kubectl(t, c, "create", "configmap", "owner")
	uid := kubectl(t, c, "get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}")
	kubectlWithStdin(t, c, fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: %s}
`, uid), "apply", "-f", "-")

	// --controllers= runs no controller in-process: no controller health
	// check, no replica campaigning for the controllers' Lease, and a
	// dependent of a deleted owner stays until a controllers process runs.
	if livez := kubectl(t, c, "get", "--raw", "/livez?verbose"); strings.Contains(livez, "]controller-") { // e.g. [+]controller-garbagecollector ok
		t.Fatalf("with --controllers= /livez checks in-process controllers:\n%s", livez)
	}
	if holder := leaseHolder(t, c); holder != "" {
		t.Fatalf("with --controllers= the controllers' Lease is held by %q", holder)
	}
	kubectl(t, c, "delete", "configmap", "owner")
	// Time must pass to show that nothing happens: 5 s, a garbage
	// collector's work many times over.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		if res := runKubectl(t, c, "", "get", "configmap", "dependent"); res.ExitCode != 0 {
			return false, fmt.Errorf("with --controllers= the dependent of a deleted owner was collected before any controllers process ran: exit code %d, %s", res.ExitCode, res.Stderr)
		}
		return false, nil // until the time is up
	})
	if !wait.Interrupted(err) || t.Context().Err() != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bp.binary, "controllers", "--kubeconfig="+c.Kubeconfig, "--controllers=garbagecollector")
	done := startBackground(t, "controllers", cmd)

	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			return false, fmt.Errorf("controllers process exited: %v", err)
		default:
		}
		res := runKubectl(t, c, "", "get", "configmap", "dependent")
		return res.ExitCode != 0 && strings.Contains(res.Stderr, "NotFound"), nil
	})
	if err != nil {
		t.Fatalf("the dependent was not collected by the controllers process within 30s: %v", err)
	}

	// The controllers process campaigned for the Lease, and holds it.
	if holder := leaseHolder(t, c); holder == "" {
		t.Fatal("the controllers process collected the dependent without holding the controllers' Lease")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err != nil {
			t.Fatalf("controllers process after SIGTERM: %v, want exit code 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("controllers process still running 30s after SIGTERM")
	}
}

// leaseHolder is the holder of the controllers' Lease on c; empty when
// there is none.
func leaseHolder(t *testing.T, c *Cluster) string {
	t.Helper()
	holder, err := controllerslease.Holder(t.Context(), clientset(t, c))
	if err != nil {
		t.Fatalf("reading Lease %s/%s: %v", controllerslease.Namespace, controllerslease.Name, err)
	}
	return holder
}
