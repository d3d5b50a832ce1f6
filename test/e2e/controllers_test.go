package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

	logPath := filepath.Join(t.TempDir(), "controllers.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() //nolint:errcheck
	cmd := exec.Command(bp.binary, "controllers", "--kubeconfig="+c.Kubeconfig, "--controllers=garbagecollector")
	cmd.Stdout, cmd.Stderr = log, log
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("controllers log:\n%s", tail(string(data), 40))
		}
	})

	kubectl(t, c, "delete", "configmap", "owner")
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := runKubectl(t, c, "", "get", "configmap", "dependent")
		if res.ExitCode != 0 && strings.Contains(res.Stderr, "NotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dependent was not collected by the controllers process within 30s")
		}
		select {
		case err := <-done:
			t.Fatalf("controllers process exited: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
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
