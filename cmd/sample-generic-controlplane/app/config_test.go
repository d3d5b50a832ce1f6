package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The root command reads every flag of its own, upstream's included, from
// --config; --print-config shows where each came from and starts nothing.
func TestPrintConfig(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	writeFile(t, config, `
data-dir: /var/lib/sample-generic-controlplane
tls-san: [cp.example, 192.0.2.10]
feature-gates: {KANA: false}
logging-format: json
audit-log-maxage: 7
`)
	writeFile(t, filepath.Join(dir, "config.yaml.d", "50-port.yaml"), "secure-port: 7443\n")
	out, err := execute(t, "--config", config, "--print-config", "--audit-log-maxage=30", "--token=sgcp::secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"data-dir: /var/lib/sample-generic-controlplane # file " + config + ":2\n",
		"tls-san: [cp.example, 192.0.2.10] # file " + config + ":3\n",
		"feature-gates: KANA=false # file " + config + ":4\n",
		"logging-format: json # file " + config + ":5\n",
		"audit-log-maxage: 30 # flag (over file " + config + ":6)\n",
		"secure-port: 7443 # drop-in " + filepath.Join(dir, "config.yaml.d", "50-port.yaml") + ":1\n",
		"bind-address: 127.0.0.1 # default\n",
		"token: <redacted> # flag\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print-config does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sgcp::secret") {
		t.Errorf("--print-config shows the join token:\n%s", out)
	}
}

// A bad config file fails before anything starts, naming the key.
func TestBadConfigFile(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, config, "data-dir: /tmp/x\nfeature-gate: {KANA: true}\n")
	_, err := execute(t, "--config", config)
	if err == nil || !strings.Contains(err.Error(), config+`:2: unknown key "feature-gate" (did you mean "feature-gates"?)`) {
		t.Errorf("error %v; want one naming line 2 and feature-gates", err)
	}
}

// The subcommands that reach a server by its data dir or kubeconfig read
// the server's config file: its data-dir, and admin.kubeconfig in it.
func TestSubcommandsReadTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	dataDir := filepath.Join(dir, "no-data-dir")
	writeFile(t, config, "data-dir: "+dataDir+"\nsecure-port: 7443\n")
	cases := []struct {
		args []string
		// want is what the command looked for.
		want string
	}{
		{[]string{"etcd", "status", "--config", config}, dataDir},
		{[]string{"snapshot", "list", "--config", config}, dataDir},
		{[]string{"token", "list", "--config", config}, filepath.Join(dataDir, "admin.kubeconfig")},
		{[]string{"cluster", "members", "--config", config}, filepath.Join(dataDir, "admin.kubeconfig")},
		{[]string{"registry", "list", "--config", config}, filepath.Join(dataDir, "admin.kubeconfig")},
		{[]string{"registry", "pools", "--config", config, "--kubeconfig", filepath.Join(dir, "other.kubeconfig")}, filepath.Join(dir, "other.kubeconfig")},
		// The command line wins.
		{[]string{"etcd", "status", "--config", config, "--data-dir", filepath.Join(dir, "other")}, filepath.Join(dir, "other")},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			t.Setenv("KUBECONFIG", "")
			// No server runs there: each says what it looked for.
			out, err := execute(t, tc.args...)
			if err != nil {
				out += err.Error()
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("output and error %q: want them to name %s", out, tc.want)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
