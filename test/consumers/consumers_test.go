// Package consumers builds programs that use our modules as other modules
// do: each is copied out of the checkout (from testdata, which go ./...
// leaves alone) into a module of its own whose go.mod requires ours, and goes
// through go mod tidy, go vet and go build or go test without a workspace or
// GOFLAGS. Only our modules are replaced with the checkout, as nobody can
// download them before a release.
//
// The tests run one after the other: each compiles with every core, and
// make test runs the integration tests beside them.
package consumers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	module = "sigs.k8s.io/sample-generic-controlplane"
	// placeholder is the version go gives a replaced module nobody tagged.
	placeholder = "v0.0.0-00010101000000-000000000000"
	// controllerRuntime is the release that matches our Kubernetes minor
	// (v0.25 requires k8s.io/* v0.37); TestControllerRuntimeExample says
	// when an upgrade of Kubernetes needs another.
	controllerRuntime = "sigs.k8s.io/controller-runtime v0.25.2"
)

// A program that uses only our API types and client needs a require of our
// client module and nothing else: no replace block, no k8s.io/kubernetes.
func TestNetworkRegistryConsumer(t *testing.T) {
	root := checkout(t)
	dir := scratchModule(t, root, "networkregistry-consumer", fmt.Sprintf(`require %[1]s/client %[2]s

replace (
	%[1]s/apis => %[3]s
	%[1]s/client => %[4]s
)
`, module, placeholder, filepath.Join(root, "apis"), filepath.Join(root, "client")))

	goCmd(t, dir, "mod", "tidy")
	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "build", "./...")

	deps := strings.Fields(goCmd(t, dir, "list", "-deps", "./..."))
	if !slices.Contains(deps, module+"/client/networkregistry") {
		t.Fatalf("the consumer does not import %s/client/networkregistry: it proves nothing", module)
	}
	for _, dep := range deps {
		if isKubernetes(dep) {
			t.Errorf("the consumer's build includes %s", dep)
		}
	}
	checkNoKubernetesModule(t, dir, "apis/ or client/")
}

// A controller-runtime suite on the launcher (testenv) needs a require of
// the testenv module and nothing else: no replace of a k8s.io module, no
// k8s.io/kubernetes. Its garbage collection and namespace deletion are
// observed through a small reconciler. Beside it, in internal/, two envtest
// suites (Ginkgo's, with webhooks, and a plain TestMain) run on the
// launcher's server as an existing cluster: the envtest drop-in that
// docs/testing.md shows as a diff; the Ginkgo suite also runs as it was
// before the diff, on USE_EXISTING_CLUSTER. It runs the binary that
// $SGCP_BINARY names (make test sets it).
func TestLauncherConsumer(t *testing.T) {
	root := checkout(t)
	dir := scratchModule(t, root, "launcher-consumer", fmt.Sprintf(`require (
	%[1]s/testenv %[2]s
	%[3]s
)

replace %[1]s/testenv => %[4]s
`, module, placeholder, controllerRuntime, filepath.Join(root, "testenv")))

	goCmd(t, dir, "mod", "tidy")
	var gomod struct {
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(goCmd(t, dir, "mod", "edit", "-json")), &gomod); err != nil {
		t.Fatal(err)
	}
	for _, r := range gomod.Replace {
		if r.Old.Path != module+"/testenv" {
			t.Errorf("the consumer's go.mod replaces %s: it must need no replace but of our unpublished module", r.Old.Path)
		}
	}
	checkNoKubernetesModule(t, dir, "testenv/")
	checkControllerRuntimeMatches(t, root, dir)
	checkSuitesBefore(t, root, dir)
	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "test", "-count=1", "-timeout=5m", "./...")
}

// checkNoKubernetesModule fails the test when the module graph of the
// module in dir includes k8s.io/kubernetes; suspects are the modules of
// ours it requires.
func checkNoKubernetesModule(t *testing.T, dir, suspects string) {
	t.Helper()
	for _, m := range strings.Split(strings.TrimSpace(goCmd(t, dir, "list", "-m", "all")), "\n") {
		if path, _, _ := strings.Cut(m, " "); isKubernetes(path) {
			t.Errorf("the consumer's module graph includes %s: does %s require it?", m, suspects)
		}
	}
}

// A test suite of a controller-runtime controller runs against our
// in-process control plane (controlplane/testing) with the go.mod lines
// that hack/print-replaces.sh prints, as docs/embedding.md says.
func TestControllerRuntimeExample(t *testing.T) {
	root := checkout(t)
	replaces := run(t, root, filepath.Join(root, "hack", "print-replaces.sh"))
	dir := scratchModule(t, root, "controller-runtime-example", replaces+"\nrequire "+controllerRuntime+"\n")

	goCmd(t, dir, "mod", "tidy")
	checkControllerRuntimeMatches(t, root, dir)
	goCmd(t, dir, "vet", "./...")
	goCmd(t, dir, "test", "-count=1", "-timeout=5m", "./...")
}

// checkControllerRuntimeMatches fails the test unless the controller-runtime
// release that the module in dir requires is the one for our Kubernetes
// minor: its go.mod requires the k8s.io modules of the minor it was
// released for.
func checkControllerRuntimeMatches(t *testing.T, root, dir string) {
	t.Helper()
	kubernetes := goCmd(t, root, "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	crPath, crVersion, _ := strings.Cut(controllerRuntime, " ")
	var crClientGo string
	for _, edge := range strings.Split(goCmd(t, dir, "mod", "graph"), "\n") {
		if from, to, _ := strings.Cut(edge, " "); from == crPath+"@"+crVersion && strings.HasPrefix(to, "k8s.io/client-go@") {
			crClientGo = strings.TrimPrefix(to, "k8s.io/client-go@")
		}
	}
	if minor(crClientGo) != minor(kubernetes) {
		t.Fatalf("%s requires k8s.io/client-go %s, for another Kubernetes minor than our %s: choose the controller-runtime release for ours (go list -m -versions %s)", controllerRuntime, crClientGo, kubernetes, crPath)
	}
}

// docs/embedding.md shows the example's tests and the go.mod lines; they
// must be what the tests above run.
func TestEmbeddingDocIsCurrent(t *testing.T) {
	root := checkout(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		region string // what the doc's markers name
		want   string
		fix    string
	}{
		{
			region: "hack/print-replaces.sh /path/to/sample-generic-controlplane",
			want:   run(t, root, filepath.Join(root, "hack", "print-replaces.sh"), "/path/to/sample-generic-controlplane"),
			fix:    "run the command and paste its output",
		},
	}
	for _, file := range []string{"example_test.go", "webhook_test.go"} {
		example, err := os.ReadFile(filepath.Join("testdata", "controller-runtime-example", file))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ region, want, fix string }{
			region: "test/consumers/testdata/controller-runtime-example/" + file,
			want:   string(example),
			fix:    "copy the file",
		})
	}
	for _, tc := range tests {
		got, err := region(string(doc), tc.region)
		if err != nil {
			t.Errorf("docs/embedding.md: %v", err)
			continue
		}
		if got != tc.want {
			t.Errorf("docs/embedding.md shows another %s than the checkout's: %s between its markers\n--- doc\n%s\n--- want\n%s", tc.region, tc.fix, got, tc.want)
		}
	}
}

// region returns the code block between <!-- begin NAME --> and
// <!-- end NAME --> in doc, without its fences.
func region(doc, name string) (string, error) {
	begin, end := "<!-- begin "+name+" -->\n", "<!-- end "+name+" -->"
	_, rest, ok := strings.Cut(doc, begin)
	if !ok {
		return "", fmt.Errorf("no %q marker", strings.TrimSpace(begin))
	}
	block, _, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("no %q marker", end)
	}
	_, block, ok = strings.Cut(block, "\n") // the opening fence
	block, ok2 := strings.CutSuffix(block, "```\n")
	if !ok || !ok2 {
		return "", fmt.Errorf("%s: write one fenced code block between the markers", name)
	}
	return block, nil
}

// checkout returns the root of the checkout, and makes go test's cache keep
// this package's result only while no file of the checkout changes: the go
// commands it runs read them, but the cache sees only what the test process
// opens or stats.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin") {
			return filepath.SkipDir
		}
		_, err = os.Stat(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// scratchModule copies testdata/name to a temporary directory and writes its
// go.mod: the module line, our go line, then requires and replaces.
func scratchModule(t *testing.T, root, name, requires string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	goVersion := goCmd(t, root, "list", "-m", "-f", "{{.GoVersion}}")
	gomod := fmt.Sprintf("module example.com/%s\n\ngo %s\n\n%s", name, goVersion, requires)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goCmd runs go with args in dir as a consumer would: without a workspace
// or GOFLAGS, and with the local toolchain.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(run(t, dir, "go", args...))
}

// run runs name with args in dir, logs how long it took, and returns its
// standard output; it fails the test, with everything the command wrote,
// when the command fails.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	line := strings.Join(append([]string{filepath.Base(name)}, args...), " ")
	if err != nil {
		t.Fatalf("%s in %s: %v\n%s%s", line, dir, err, stdout.String(), stderr.String())
	}
	t.Logf("%s (%s): %.1fs", line, filepath.Base(dir), time.Since(start).Seconds())
	return stdout.String()
}

func isKubernetes(path string) bool {
	return path == "k8s.io/kubernetes" || strings.HasPrefix(path, "k8s.io/kubernetes/")
}

// minor returns the minor version of a Kubernetes release (v1.37.2) or of
// its staging modules (v0.37.2): "37".
func minor(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}
