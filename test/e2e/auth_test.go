package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// The admin may do anything and impersonate; an unknown user may do nothing.
func TestAuthCanI(t *testing.T) {
	c := sharedCluster(t)
	for _, tc := range []struct {
		name     string
		args     []string
		want     string
		wantCode int
	}{
		{"admin", []string{"auth", "can-i", "create", "configmaps"}, "yes", 0},
		{"impersonated user without bindings", []string{"auth", "can-i", "create", "configmaps", "--as=someone"}, "no", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runKubectl(t, c, "", tc.args...)
			if got := strings.TrimSpace(res.Stdout); got != tc.want || res.ExitCode != tc.wantCode {
				t.Errorf("kubectl %s: printed %q with exit code %d, want %q with exit code %d; stderr:\n%s",
					strings.Join(tc.args, " "), got, res.ExitCode, tc.want, tc.wantCode, res.Stderr)
			}
		})
	}
}

// The printed kubeconfig authenticates as the admin.
func TestAuthWhoAmI(t *testing.T) {
	c := sharedCluster(t)
	if got := kubectl(t, c, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); got != "admin" {
		t.Fatalf("kubectl auth whoami: username %q, want admin", got)
	}
}

// A token issued for a service account authenticates as it, with nothing
// but the token and the CA from the data dir, and grants it no more than its
// bindings.
func TestServiceAccountToken(t *testing.T) {
	c := sharedCluster(t)
	deleteLeftovers(t, c, "default", "serviceaccount/robot")
	kubectl(t, c, "create", "serviceaccount", "robot", "-n", "default")
	token := strings.TrimSpace(kubectl(t, c, "create", "token", "robot", "-n", "default"))
	if parts := strings.Split(token, "."); len(parts) != 3 {
		t.Fatalf("kubectl create token printed %q, want a JWT (three dot-separated parts)", token)
	}

	asRobot := func(args ...string) kubectlResult {
		return runKubectl(t, c, "", append([]string{
			"--kubeconfig=/dev/null",
			"--server=" + c.URL,
			"--certificate-authority=" + filepath.Join(c.DataDir, "pki", "ca.crt"),
			"--token=" + token,
		}, args...)...)
	}
	res := asRobot("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if want := "system:serviceaccount:default:robot"; res.ExitCode != 0 || res.Stdout != want {
		t.Fatalf("kubectl auth whoami with the token: printed %q with exit code %d, want %q; stderr:\n%s", res.Stdout, res.ExitCode, want, res.Stderr)
	}
	res = asRobot("auth", "can-i", "create", "configmaps")
	if got := strings.TrimSpace(res.Stdout); got != "no" || res.ExitCode != 1 {
		t.Errorf("kubectl auth can-i create configmaps with the token: printed %q with exit code %d, want \"no\" with exit code 1; stderr:\n%s", got, res.ExitCode, res.Stderr)
	}
}

// The admin kubeconfig sits in the data dir, is readable by its owner only,
// and verifies the server instead of trusting anything.
func TestKubeconfigFile(t *testing.T) {
	c := sharedCluster(t)
	if want := filepath.Join(c.DataDir, "admin.kubeconfig"); c.Kubeconfig != want {
		t.Errorf("printed KUBECONFIG=%s, want %s", c.Kubeconfig, want)
	}
	info, err := os.Stat(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode(); mode.Perm() != 0o600 || !mode.IsRegular() {
		t.Errorf("%s has mode %v, want a regular file with -rw------- (0600): it holds the admin's private key", c.Kubeconfig, mode)
	}
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "insecure-skip-tls-verify") {
		t.Errorf("%s contains insecure-skip-tls-verify; it must verify the server with the CA", c.Kubeconfig)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("parsing %s: %v", c.Kubeconfig, err)
	}
	wantServer := "https://127.0.0.1:" + strconv.Itoa(c.Port)
	for name, cluster := range cfg.Clusters {
		if len(cluster.CertificateAuthorityData) == 0 && cluster.CertificateAuthority == "" {
			t.Errorf("%s: cluster %q has no certificate authority", c.Kubeconfig, name)
		}
		if cluster.Server != wantServer {
			t.Errorf("%s: cluster %q has server %q, want %q (--bind-address and --secure-port)", c.Kubeconfig, name, cluster.Server, wantServer)
		}
	}
}
