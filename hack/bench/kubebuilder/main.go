// Command kubebuilder times the suites of a project kubebuilder scaffolded
// (test/consumers/testdata/kubebuilder-project: the controllers' suite, and
// the webhooks' with a manager and its webhook server) on
// controller-runtime's envtest, with kube-apiserver and etcd built from this
// module's graph, and on ours through testenv/envtest: the same files but
// for the envtest import line. For each suite it reports BeforeSuite (the
// environment's Start, and for the webhooks' suite the manager's start
// until its webhook server answers) and the whole suite's process, from
// exec to exit, the test binaries compiled beforehand. The garbage
// collection spec is skipped on both: envtest's control plane has no
// garbage collector, and would wait it out and fail.
//
//	make bench   # builds what it needs, then:
//	go run ./hack/bench/kubebuilder -binary bin/sample-generic-controlplane \
//	    -kube-apiserver bin/kube-apiserver -etcd bin/anchor-etcd
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// suites are the project's test packages, each timed alone.
var suites = []string{"internal/controller", "internal/webhook/v1"}

const (
	ourImport = `"sigs.k8s.io/sample-generic-controlplane/testenv/envtest"`
	crImport  = `"sigs.k8s.io/controller-runtime/pkg/envtest"`
	// skip is the spec neither side runs (see the package doc).
	skip = "garbage collected"
)

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane, for ours")
	kubeAPIServer := flag.String("kube-apiserver", "bin/kube-apiserver", "kube-apiserver for envtest, built from this module (make bench builds it)")
	etcd := flag.String("etcd", "bin/anchor-etcd", "etcd for envtest, built from this module (make bench builds it)")
	project := flag.String("project", "test/consumers/testdata/kubebuilder-project", "the kubebuilder project")
	runs := flag.Int("runs", 5, "runs per figure; medians are reported")
	flag.Parse()
	for _, p := range []*string{binary, kubeAPIServer, etcd, project} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			benchutil.Fail(err)
		}
		*p = abs
	}
	// The checkout this runs in, for the testenv module and the go line.
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.GoVersion}}").Output()
	if err != nil {
		benchutil.Fail(fmt.Errorf("run it in the checkout: go list -m: %w", err))
	}
	root, goVersion, _ := strings.Cut(strings.TrimSpace(string(mod)), " ")
	work, err := os.MkdirTemp("", "sgcp-bench-kubebuilder-")
	if err != nil {
		benchutil.Fail(err)
	}
	// Failures end the process (os.Exit): the work dir goes first.
	fail := func(err error) {
		os.RemoveAll(work) //nolint:errcheck
		benchutil.Fail(err)
	}
	defer os.RemoveAll(work) //nolint:errcheck

	// envtest finds its binaries by these names in KUBEBUILDER_ASSETS.
	assets := filepath.Join(work, "assets")
	if err := os.MkdirAll(assets, 0o755); err != nil {
		fail(err)
	}
	for name, target := range map[string]string{"kube-apiserver": *kubeAPIServer, "etcd": *etcd} {
		if err := os.Symlink(target, filepath.Join(assets, name)); err != nil {
			fail(err)
		}
	}

	sides := []*side{{name: "ours"}, {name: "envtest", env: []string{"KUBEBUILDER_ASSETS=" + assets}}}
	for _, s := range sides {
		s.dir = filepath.Join(work, s.name)
		if err := s.prepare(*project, filepath.Join(root, "testenv"), goVersion, s.name == "envtest"); err != nil {
			fail(fmt.Errorf("%s: %w", s.name, err))
		}
		s.env = append(s.env, "SGCP_BINARY="+*binary)
		s.beforeSuite, s.whole = map[string][]float64{}, map[string][]float64{}
	}
	for i := range *runs {
		fmt.Fprintf(os.Stderr, "run %d/%d\n", i+1, *runs)
		for _, suite := range suites {
			for _, s := range sides {
				if err := s.run(suite); err != nil {
					fail(fmt.Errorf("%s, %s: %w", s.name, suite, err))
				}
			}
		}
	}
	benchutil.Header(fmt.Sprintf("a kubebuilder project's suites, one import apart, median of %d runs (min-max), seconds", *runs), "testenv/envtest (ours)", "envtest (kube-apiserver+etcd)")
	for _, suite := range suites {
		benchutil.Row(suite+": BeforeSuite", sides[0].beforeSuite[suite], sides[1].beforeSuite[suite], benchutil.Seconds)
		benchutil.Row(suite+": whole suite", sides[0].whole[suite], sides[1].whole[suite], benchutil.Seconds)
	}
}

// side is the project on one envtest: a module of its own, its suites
// compiled.
type side struct {
	name               string
	dir                string
	env                []string
	beforeSuite, whole map[string][]float64
}

// prepare copies the project, writes its go.mod, puts controller-runtime's
// envtest import back if asked, and compiles each suite.
func (s *side) prepare(project, testenv, goVersion string, controllerRuntimeEnvtest bool) error {
	if err := os.CopyFS(s.dir, os.DirFS(project)); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module example.com/kubebuilder-project\n\ngo %s\n\nrequire (\n\tsigs.k8s.io/controller-runtime v0.25.2\n\tsigs.k8s.io/sample-generic-controlplane/testenv v0.0.0-00010101000000-000000000000\n)\n\nreplace sigs.k8s.io/sample-generic-controlplane/testenv => %s\n", goVersion, testenv)
	if err := os.WriteFile(filepath.Join(s.dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if controllerRuntimeEnvtest {
		for _, suite := range suites {
			matches, _ := filepath.Glob(filepath.Join(s.dir, suite, "*suite_test.go"))
			for _, file := range matches {
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				if err := os.WriteFile(file, []byte(strings.Replace(string(data), ourImport, crImport, 1)), 0o644); err != nil {
					return err
				}
			}
		}
	}
	if err := s.goCmd("mod", "tidy"); err != nil {
		return err
	}
	for _, suite := range suites {
		if err := s.goCmd("test", "-c", "-o", filepath.Join(s.dir, suite, "suite.test"), "./"+suite); err != nil {
			return err
		}
	}
	return nil
}

func (s *side) goCmd(args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// run runs a suite's test binary once, in its package directory as go test
// does, and records its figures.
func (s *side) run(suite string) error {
	dir := filepath.Join(s.dir, suite)
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(filepath.Join(dir, "suite.test"), "-test.count=1", "-ginkgo.skip="+skip, "-ginkgo.json-report="+report)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	whole := time.Since(start)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	beforeSuite, err := beforeSuiteTime(report)
	if err != nil {
		return err
	}
	s.beforeSuite[suite] = append(s.beforeSuite[suite], beforeSuite.Seconds())
	s.whole[suite] = append(s.whole[suite], whole.Seconds())
	return nil
}

// beforeSuiteTime reads how long BeforeSuite took from a Ginkgo JSON report.
func beforeSuiteTime(report string) (time.Duration, error) {
	data, err := os.ReadFile(report)
	if err != nil {
		return 0, err
	}
	var reports []struct {
		SpecReports []struct {
			LeafNodeType string
			RunTime      time.Duration
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return 0, fmt.Errorf("%s: %w", report, err)
	}
	for _, r := range reports {
		for _, spec := range r.SpecReports {
			if spec.LeafNodeType == "BeforeSuite" {
				return spec.RunTime, nil
			}
		}
	}
	return 0, fmt.Errorf("%s: no BeforeSuite", report)
}
