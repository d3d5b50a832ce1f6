package consumers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubebuilderSuites are the suites of kubebuilder-project that kubebuilder
// scaffolds (the controllers' and the webhooks'), each with only its
// envtest import line changed to ours.
var kubebuilderSuites = []string{
	"internal/controller/suite_test.go",
	"internal/webhook/v1/webhook_suite_test.go",
}

const (
	ourEnvtest = `"sigs.k8s.io/sample-generic-controlplane/testenv/envtest"`
	crEnvtest  = `"sigs.k8s.io/controller-runtime/pkg/envtest"`
)

// A project laid out as kubebuilder lays it out (API types in two versions
// with a conversion hub, a controller, defaulting and validating webhooks,
// config/crd and config/webhook with their kustomizations, and kubebuilder's
// scaffolded suites) runs its suites on our control plane with one import
// line changed: each suite, with controller-runtime's envtest imported
// instead, is an envtest suite that compiles as it is. It needs a require
// of the testenv module and controller-runtime's, and runs the binary that
// $SGCP_BINARY names (make test sets it).
func TestKubebuilderProject(t *testing.T) {
	root := checkout(t)
	dir := scratchModule(t, root, "kubebuilder-project", fmt.Sprintf(`require (
	%[1]s/testenv %[2]s
	%[3]s
)

replace %[1]s/testenv => %[4]s
`, module, placeholder, controllerRuntime, filepath.Join(root, "testenv")))

	goCmd(t, dir, "mod", "tidy")
	checkNoKubernetesModule(t, dir, "testenv/")
	checkControllerRuntimeMatches(t, root, dir)

	// Each suite as it was before the change, beside the project: it
	// compiles with controller-runtime's envtest, and differs from the
	// suite CI runs by the import line alone.
	var before []string
	for _, suite := range kubebuilderSuites {
		ours, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(suite)))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := envtestSuite(string(ours))
		if err != nil {
			t.Fatalf("%s: %v", suite, err)
		}
		pkg := filepath.Dir(filepath.FromSlash(suite))
		beforeDir := filepath.Join(dir, "testdata", "before", pkg)
		if err := os.CopyFS(beforeDir, os.DirFS(filepath.Join(dir, pkg))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(beforeDir, filepath.Base(suite)), []byte(theirs), 0o644); err != nil {
			t.Fatal(err)
		}
		before = append(before, "./"+filepath.ToSlash(filepath.Join("testdata", "before", pkg)))
	}
	goCmd(t, dir, append([]string{"vet"}, before...)...)

	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "test", "-count=1", "-timeout=5m", "./...")
}

// envtestSuite is suite with controller-runtime's envtest imported instead
// of ours, in the place gofmt sorts it to; it is an error unless the suite
// imports ours on a line of its own and differs in nothing else.
func envtestSuite(suite string) (string, error) {
	var lines, out []string
	found := 0
	for _, line := range strings.Split(suite, "\n") {
		if strings.TrimSpace(line) == ourEnvtest {
			found++
			continue
		}
		lines = append(lines, line)
	}
	if found != 1 {
		return "", fmt.Errorf("imports %s on %d lines, want one", ourEnvtest, found)
	}
	// Back among controller-runtime's imports, before the first that
	// sorts after it.
	placed := false
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if !placed && strings.Contains(trimmed, `"sigs.k8s.io/controller-runtime/`) && importPath(trimmed) > strings.Trim(crEnvtest, `"`) {
			out = append(out, "\t"+crEnvtest)
			placed = true
		}
		out = append(out, line)
	}
	if !placed {
		return "", fmt.Errorf("imports nothing of controller-runtime after %s: is it an envtest suite?", crEnvtest)
	}
	return strings.Join(out, "\n"), nil
}

// importPath is the path of an import spec line, with or without a name
// or a comment.
func importPath(spec string) string {
	spec, _, _ = strings.Cut(spec, "//")
	fields := strings.Fields(spec)
	return strings.Trim(fields[len(fields)-1], `"`)
}
