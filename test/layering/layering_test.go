// Package layering checks the import rules of docs/architecture.md
// ("Layers", "Modules"): consumers of our API must never pull in
// k8s.io/kubernetes; the generic layer knows nothing of KANA; etcd's home,
// embedded-etcd/, imports nothing of the control plane above it.
//
// apis/, client/ and testenv/ are modules of their own, so the rule is structural: their
// go.mod files do not require k8s.io/kubernetes, and an import of it, in code
// or in a test, does not build there. This test keeps it so (a require added
// by go mod tidy would make it build again); test/consumers proves that a
// module requiring ours builds without a replace block.
package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestAPIAndClientDoNotImportKubernetes(t *testing.T) {
	tests := []struct {
		name string
		dir  string // relative to the checkout
	}{
		{name: "apis", dir: "apis"},
		{name: "client", dir: "client"},
		{name: "testenv", dir: "testenv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", tc.dir)

			// The module graph as the module's own go.mod makes it, not a
			// workspace's: what a consumer resolves.
			for _, m := range goList(t, dir, "-m", "-f", "{{.Path}} {{.Version}}", "all") {
				path, version, _ := strings.Cut(m, " ")
				if isKubernetes(path) {
					t.Errorf("%s/go.mod requires %s: remove the import that needs it and run go mod tidy", tc.dir, m)
				}
				if strings.HasPrefix(path, "k8s.io/") && version == "v0.0.0" {
					t.Errorf("%s/go.mod requires %s, which no consumer can resolve: require a released version", tc.dir, m)
				}
			}

			// -test: a package's tests must build from the same graph.
			for _, dep := range goList(t, dir, "-deps", "-test", "./...") {
				if isKubernetes(dep) {
					t.Errorf("%s depends on %s", tc.dir, dep)
				}
			}
		})
	}
}

func isKubernetes(path string) bool {
	return path == "k8s.io/kubernetes" || strings.HasPrefix(path, "k8s.io/kubernetes/")
}

// goList runs go list in dir, in module mode without a workspace, and returns
// its output lines.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
