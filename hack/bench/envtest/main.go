// Command envtest measures the test control planes a Go suite can start
// beside controller-runtime's envtest: our in-process server
// (controlplane/testing), the launcher (testenv, our binary as a process)
// and envtest with kube-apiserver and etcd built from this module's graph.
// Each run times, per contender: start to ready (a first namespace
// created), 10 CRDs installed until established, a suite of 20 reconciler
// tests (a controller-runtime manager; each test in a namespace of its own,
// deleted at its end, and waited for where namespaces go), and stop; its
// peak memory; and ten servers started at once until all are ready.
//
// Every measurement runs in a child process: this command again with
// -child for envtest and the launcher, bin/bench-envtest-inprocess for the
// in-process server. The child reports its own peak RSS and those of the
// servers it ran as processes, so the in-process server's memory is its
// process's and envtest's is that of the suite's process, its
// kube-apiserver and its etcd. Contenders take turns within each run, so
// noise on the machine hits all of them.
//
//	make bench   # builds what it needs, then:
//	go run ./hack/bench/envtest -kube-apiserver bin/kube-apiserver -etcd bin/anchor-etcd \
//	    -inprocess bin/bench-envtest-inprocess -binary bin/sample-generic-controlplane
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/envtest/phases"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

func main() {
	kubeAPIServer := flag.String("kube-apiserver", "bin/kube-apiserver", "kube-apiserver for envtest, built from this module (make bench builds it)")
	etcd := flag.String("etcd", "bin/anchor-etcd", "etcd for envtest, built from this module (make bench builds it)")
	inProcess := flag.String("inprocess", "bin/bench-envtest-inprocess", "the in-process contender's program (go build -o bin/bench-envtest-inprocess ./hack/bench/envtest/inprocess)")
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane, for the launcher")
	crds := flag.String("crds", "hack/bench/envtest/testdata/crds", "directory of the 10 CRDs")
	runs := flag.Int("runs", 5, "runs per figure; medians are reported")
	tests := flag.Int("tests", 20, "reconciler tests in the suite")
	servers := flag.Int("servers", 10, "servers started at once")
	child := flag.String("child", "", "run as the child process of this contender (envtest or launcher), with the arguments after --")
	startsOnly := flag.Bool("starts-only", false, "measure only the starts: one server to ready, and -servers at once, with each child's CPU time; quicker than the whole comparison, to measure a change to the start")
	only := flag.String("contenders", "", "comma-separated contenders to measure (in-process, launcher, envtest); all if empty. With less than all, no ratios")
	flag.Parse()

	paths := map[string]*string{"-kube-apiserver": kubeAPIServer, "-etcd": etcd, "-inprocess": inProcess, "-binary": binary, "-crds": crds}
	for name, p := range paths {
		abs, err := filepath.Abs(*p)
		if err != nil {
			benchutil.Fail(fmt.Errorf("%s: %w", name, err))
		}
		*p = abs
	}
	byName := map[string]phases.Contender{
		"envtest":  envtestContender(*kubeAPIServer, *etcd),
		"launcher": launcherContender(*binary),
	}
	if *child != "" {
		c, ok := byName[*child]
		if !ok {
			benchutil.Fail(fmt.Errorf("-child %q: want envtest or launcher", *child))
		}
		if err := phases.RunChild(c, flag.Args(), os.Stdout); err != nil {
			phases.Fail(err)
		}
		return
	}

	self, err := os.Executable()
	if err != nil {
		benchutil.Fail(err)
	}
	// What each contender's child process is.
	selfChild := func(name string) []string {
		return []string{self, "-child=" + name, "-kube-apiserver=" + *kubeAPIServer, "-etcd=" + *etcd, "-binary=" + *binary, "--"}
	}
	contenders := []contender{
		{name: "in-process", command: []string{*inProcess, "--"}},
		{name: "launcher", command: selfChild("launcher"), missing: launcherMissing},
		{name: "envtest", command: selfChild("envtest")},
	}
	if *only != "" {
		if err := skipOthers(contenders, strings.Split(*only, ",")); err != nil {
			benchutil.Fail(err)
		}
	}
	// What each measured contender needs.
	needs := map[string]map[string]string{
		"in-process": {"-inprocess": *inProcess},
		"launcher":   {"-binary": *binary},
		"envtest":    {"-kube-apiserver": *kubeAPIServer, "-etcd": *etcd},
	}
	for _, c := range contenders {
		if c.missing != "" {
			continue
		}
		for name, p := range needs[c.name] {
			if _, err := os.Stat(p); err != nil {
				benchutil.Fail(fmt.Errorf("%s: %w; make bench builds it", name, err))
			}
		}
	}
	if *startsOnly {
		measureStarts(contenders, *runs, *servers)
		return
	}

	fmt.Fprintf(os.Stderr, "load average before: %s\n", loadAverage())
	sequenceArgs := []string{"-crds=" + *crds, "-tests=" + strconv.Itoa(*tests)}
	parallelArgs := []string{"-servers=" + strconv.Itoa(*servers)}
	for run := range *runs {
		for i := range contenders {
			c := &contenders[i]
			if c.missing != "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "run %d/%d: %s\n", run+1, *runs, c.name)
			if err := c.measure(sequenceArgs, &c.sequence); err != nil {
				benchutil.Fail(err)
			}
			fmt.Fprintf(os.Stderr, "run %d/%d: %s, %d at once\n", run+1, *runs, c.name, *servers)
			if err := c.measure(parallelArgs, &c.parallel); err != nil {
				benchutil.Fail(err)
			}
		}
	}
	load := loadAverage()
	printTable(contenders, *runs, *tests, *servers)
	fmt.Printf("\nload average (1, 5, 15 min) after the runs: %s\n", load)
}

// contender is a test control plane and the child process that measures it.
type contender struct {
	name    string
	command []string
	// missing, if set, says why it is not measured.
	missing            string
	sequence, parallel samples
	// starts are -starts-only's: one server, and -servers at once.
	starts, startsParallel samples
}

// samples are the figures of each run, in seconds and MiB.
type samples struct {
	start, crds, suite, stop, allReady, peakRSS []float64
	// cpu is the child's CPU time, user and system, its servers' processes
	// included: from its exec to its exit.
	cpu []float64
	// namespaceWait is the part of suite spent waiting for namespaces to
	// go, and suiteNoWait the rest: the suite as envtest runs it.
	namespaceWait, suiteNoWait []float64
}

// measure runs the child process once with args and appends its figures.
func (c *contender) measure(args []string, into *samples) error {
	cmd := exec.Command(c.command[0], append(c.command[1:], args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", c.name, strings.Join(args, " "), err, tail(stderr.String()))
	}
	var r phases.Result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return fmt.Errorf("%s: reading its result %q: %w", c.name, stdout.String(), err)
	}
	into.peakRSS = append(into.peakRSS, float64(r.OwnPeakKiB+r.DescendantsPeakKiB)/1024)
	into.start = append(into.start, r.Start)
	into.crds = append(into.crds, r.CRDs)
	into.suite = append(into.suite, r.Suite)
	into.namespaceWait = append(into.namespaceWait, r.NamespaceWait)
	into.suiteNoWait = append(into.suiteNoWait, r.Suite-r.NamespaceWait)
	into.stop = append(into.stop, r.Stop)
	into.allReady = append(into.allReady, r.AllReady)
	into.cpu = append(into.cpu, cpuSeconds(cmd.ProcessState))
	return nil
}

// tail is the end of a child's error output.
func tail(s string) string {
	const max = 4000
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

// loadAverage is /proc/loadavg's first three fields: how busy the machine
// was, to read the figures by.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

// cpuSeconds is the user and system time of an exited process, its
// descendants' that it waited for included (wait4's rusage on Linux).
func cpuSeconds(ps *os.ProcessState) float64 {
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}
