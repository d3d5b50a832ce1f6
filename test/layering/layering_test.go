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
		out, err := exec.Command("go", "list", "-deps", pkgs).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkgs, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "k8s.io/kubernetes" || strings.HasPrefix(dep, "k8s.io/kubernetes/") {
				t.Errorf("%s depends on %s", pkgs, dep)
			}
		}
	}
}
