package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const registryClaims = `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata:
  name: e2e-registry-svc
spec:
  addressSpace:
  - reference: {group: "", resource: services}
    prefix: 198.18.0.0/16
    description: e2e Service range
  - reference: {group: "", resource: services}
    prefix: fd00:198:18::/112
`

const registryConflict = `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata:
  name: e2e-registry-pods
spec:
  addressSpace:
  - reference: {group: "", resource: pods}
    prefix: 198.18.128.0/17
  - reference: {group: example.com, resource: tunnels}
    prefix: 198.19.0.0/16
    description: e2e tunnel range
`

// runBinary runs a subcommand of the binary under test and returns how it
// ended, whatever its exit code.
func runBinary(t *testing.T, args ...string) commandResult {
	t.Helper()
	return runBinaryWithEnv(t, nil, args...)
}

// runBinaryWithEnv is runBinary with env added to an environment that has
// no KUBECONFIG, no in-cluster service and an empty home directory, so that
// nothing on the machine that runs the tests tells the binary where a
// control plane is.
func runBinaryWithEnv(t *testing.T, env []string, args ...string) commandResult {
	t.Helper()
	bp, ok := provider.(*binaryProvider)
	if !ok {
		t.Fatalf("this test runs the binary's subcommands; the provider is a %T", provider)
	}
	home := t.TempDir()
	return runCommand(t, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bp.binary, args...)
		killWithParent(cmd)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "KUBERNETES_SERVICE_HOST=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(append(cmd.Env, "HOME="+home), env...)
		return cmd
	}, "")
}

// registry list and whois show what the registry decided on claims made
// with kubectl.
func TestRegistrySubcommands(t *testing.T) {
	c := sharedCluster(t)
	deleteLeftovers(t, c, "", "networkclaim/e2e-registry-svc", "networkclaim/e2e-registry-pods")
	kubectlWithStdin(t, c, registryClaims, "apply", "-f", "-")
	kubectl(t, c, "wait", "--for=condition=Ready", "networkclaim/e2e-registry-svc", "--timeout=25s")
	kubectlWithStdin(t, c, registryConflict, "apply", "-f", "-")
	kubectl(t, c, "wait", "--for=condition=Ready=false", "networkclaim/e2e-registry-pods", "--timeout=25s")
	kubeconfig := "--kubeconfig=" + c.Kubeconfig

	res := runBinary(t, "registry", "list", kubeconfig)
	if res.ExitCode != 0 {
		t.Fatalf("registry list: exit code %d; stderr:\n%s", res.ExitCode, res.Stderr)
	}
	lines := strings.Split(strings.TrimRight(res.Stdout, "\n"), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "CLAIM PREFIX STATUS REFERENCE SINCE DETAILS" {
		t.Errorf("registry list header %q", got)
	}
	// Other tests' claims are listed too; these are ours, in order. SINCE
	// is how long ago the registry decided: seconds, here.
	var ours []string
	for _, line := range lines[1:] {
		if strings.HasPrefix(line, "e2e-registry-") {
			f := strings.Fields(line)
			ours = append(ours, strings.Join(append(f[:4:4], strings.Join(f[5:], " ")), " | "))
			if !sinceColumn.MatchString(f[4]) {
				t.Errorf("registry list: SINCE %q is not a recent duration: %q", f[4], line)
			}
		}
	}
	want := []string{
		"e2e-registry-pods | 198.18.128.0/17 | Unavailable | pods | overlaps 198.18.0.0/16 held by NetworkClaim e2e-registry-svc",
		"e2e-registry-pods | 198.19.0.0/16 | Allocated | tunnels.example.com | e2e tunnel range",
		"e2e-registry-svc | 198.18.0.0/16 | Allocated | services | e2e Service range",
		"e2e-registry-svc | fd00:198:18::/112 | Allocated | services | ",
	}
	if strings.Join(ours, "\n") != strings.Join(want, "\n") {
		t.Errorf("registry list rows of this test:\n%s\nwant:\n%s\nwhole output:\n%s", strings.Join(ours, "\n"), strings.Join(want, "\n"), res.Stdout)
	}

	// REFERENCE reads as the server's table writes references.
	wide := strings.Fields(kubectl(t, c, "get", "networkclaim", "e2e-registry-pods", "-o", "wide", "--no-headers"))
	if got := wide[len(wide)-1]; got != "pods,tunnels.example.com" {
		t.Errorf("kubectl get networkclaim -o wide: references %q, want those of registry list, \"pods,tunnels.example.com\"", got)
	}

	// Without --kubeconfig, KUBECONFIG names the control plane, as for kubectl.
	res = runBinaryWithEnv(t, []string{"KUBECONFIG=" + c.Kubeconfig}, "registry", "list")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "e2e-registry-svc") {
		t.Errorf("registry list with KUBECONFIG: exit code %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	tests := []struct {
		query string
		// want are the PREFIX and CLAIM columns of the rows.
		want []string
	}{
		{"198.18.200.1", []string{"198.18.0.0/16 e2e-registry-svc"}},
		{"198.18.0.0/15", []string{"198.18.0.0/16 e2e-registry-svc", "198.19.0.0/16 e2e-registry-pods"}},
		{"fd00:198:18::a", []string{"fd00:198:18::/112 e2e-registry-svc"}},
	}
	for _, tc := range tests {
		res := runBinary(t, "registry", "whois", tc.query, kubeconfig)
		if res.ExitCode != 0 {
			t.Fatalf("registry whois %s: exit code %d; stderr:\n%s", tc.query, res.ExitCode, res.Stderr)
		}
		lines := strings.Split(strings.TrimRight(res.Stdout, "\n"), "\n")
		var got []string
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			got = append(got, f[0]+" "+f[1])
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || !strings.HasPrefix(lines[0], "PREFIX") {
			t.Errorf("registry whois %s:\n%s\nwant rows %q", tc.query, res.Stdout, tc.want)
		}
	}

	res = runBinary(t, "registry", "whois", "203.0.113.7", kubeconfig)
	if res.ExitCode != 0 || res.Stdout != "" || strings.TrimSpace(res.Stderr) != "No NetworkClaim holds 203.0.113.7" {
		t.Errorf("registry whois of an address nobody holds: exit code %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	res = runBinary(t, "registry", "whois", "198.18.0.1", kubeconfig, "-o", "json")
	var records []struct {
		Claim, Prefix, Status, Description, Date string
		Reference                                *struct{ Group, Resource string }
	}
	if err := json.Unmarshal([]byte(res.Stdout), &records); err != nil || res.ExitCode != 0 {
		t.Fatalf("registry whois -o json: exit code %d, %v; stdout:\n%s\nstderr:\n%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	if len(records) != 1 || records[0].Claim != "e2e-registry-svc" || records[0].Status != "Allocated" || records[0].Date == "" ||
		records[0].Reference == nil || records[0].Reference.Resource != "services" {
		t.Errorf("registry whois -o json: %s", res.Stdout)
	}

	// Errors exit 1 with one line that says what to write.
	errorCases := []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"registry", "whois", "198.18.0.300", kubeconfig}, wantErr: "write an IP address such as 10.96.0.1"},
		// Neither --kubeconfig, nor KUBECONFIG, nor ~/.kube/config.
		{args: []string{"registry", "list"}, wantErr: "no kubeconfig: set --kubeconfig=FILE or KUBECONFIG, e.g. --kubeconfig=$HOME/.local/share/sample-generic-controlplane/admin.kubeconfig"},
		{args: []string{"registry", "list", kubeconfig, "-o", "wide"}, wantErr: "write -o json, -o yaml, or leave it out for a table"},
	}
	for _, tc := range errorCases {
		res := runBinary(t, tc.args...)
		if res.ExitCode != 1 || !strings.HasPrefix(res.Stderr, "Error: ") || !strings.Contains(res.Stderr, tc.wantErr) || strings.Count(res.Stderr, "\n") != 1 {
			t.Errorf("%s: exit code %d, stderr %q; want exit code 1 and one line saying %q", strings.Join(tc.args, " "), res.ExitCode, res.Stderr, tc.wantErr)
		}
	}
}

// sinceColumn matches what registry list shows for a decision made within
// the last hour: a kubectl-style duration of seconds or minutes.
var sinceColumn = regexp.MustCompile(`^[0-9]+(s|m[0-9]*s?)$`)
