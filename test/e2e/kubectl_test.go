package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds every kubectl call that is not a watch, and every
// run of the binary's subcommands.
const kubectlTimeout = 30 * time.Second

// commandResult is how a command ended.
type commandResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// kubectlResult is how a kubectl call ended.
type kubectlResult = commandResult

// runCommand runs the command that newCmd makes for a context that ends
// after kubectlTimeout, with stdin, and returns how it ended, whatever its
// exit code. It fails t when the command cannot run or takes too long.
func runCommand(t *testing.T, newCmd func(context.Context) *exec.Cmd, stdin string) commandResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), kubectlTimeout)
	defer cancel()
	cmd := newCmd(ctx)
	name := strings.Join(append([]string{filepath.Base(cmd.Path)}, cmd.Args[1:]...), " ")
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: no answer within %s; stderr:\n%s", name, kubectlTimeout, stderr.String())
	}
	res := commandResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// kubectlCommand returns a kubectl command against c: KUBECONFIG is the path
// the control plane printed, and the discovery cache is private to c.
func kubectlCommand(ctx context.Context, c *Cluster, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, kubectlBinary, args...)
	env := []string{"KUBECONFIG=" + c.Kubeconfig, "KUBECACHEDIR=" + filepath.Join(c.WorkDir, "kube-cache")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "KUBECACHEDIR=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	killWithParent(cmd)
	return cmd
}

// runKubectl runs kubectl with stdin and returns how it ended, whatever its
// exit code. It fails t when kubectl cannot run or takes too long.
func runKubectl(t *testing.T, c *Cluster, stdin string, args ...string) kubectlResult {
	t.Helper()
	return runCommand(t, func(ctx context.Context) *exec.Cmd { return kubectlCommand(ctx, c, args...) }, stdin)
}

// kubectl runs kubectl, requires it to succeed and returns its stdout.
func kubectl(t *testing.T, c *Cluster, args ...string) string {
	t.Helper()
	return kubectlWithStdin(t, c, "", args...)
}

// kubectlWithStdin runs kubectl with stdin, requires it to succeed and
// returns its stdout.
func kubectlWithStdin(t *testing.T, c *Cluster, stdin string, args ...string) string {
	t.Helper()
	res := runKubectl(t, c, stdin, args...)
	if res.ExitCode != 0 {
		t.Fatalf("kubectl %s: exit code %d; stderr:\n%s", strings.Join(args, " "), res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// deleteLeftovers deletes objects a test creates on the shared control plane,
// in case an earlier run (go test -count=N) left them there.
func deleteLeftovers(t *testing.T, c *Cluster, namespace string, objects ...string) {
	t.Helper()
	kubectl(t, c, append([]string{"delete", "-n", namespace, "--ignore-not-found", "--wait"}, objects...)...)
}
