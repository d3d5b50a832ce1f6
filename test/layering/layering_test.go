// Package layering checks the import rules of DESIGN.md: consumers of our
// API must never pull in k8s.io/kubernetes.
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

func TestAPIAndClientDoNotImportKubernetes(t *testing.T) {
	for _, pkgs := range []string{"sigs.k8s.io/sample-generic-controlplane/apis/...", "sigs.k8s.io/sample-generic-controlplane/client/..."} {
		// -test: a package's tests are part of what a consumer's
		// go mod tidy resolves.
		out, err := exec.Command("go", "list", "-deps", "-test", pkgs).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps -test %s: %v\n%s", pkgs, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "k8s.io/kubernetes" || strings.HasPrefix(dep, "k8s.io/kubernetes/") {
				t.Errorf("%s depends on %s", pkgs, dep)
			}
		}
	}
}
