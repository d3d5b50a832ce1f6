package e2e

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// readyLines are the lines a normal start writes at the default verbosity:
// the ready banner on stdout, and nothing on stderr.
var readyLines = []*regexp.Regexp{
	regexp.MustCompile(`^sample-generic-controlplane is ready \(\d+(\.\d+)?m?s\)$`),
	regexp.MustCompile(`^  API server: https://`),
	regexp.MustCompile(`^  data dir: `),
	regexp.MustCompile(`^  export KUBECONFIG=.*admin\.kubeconfig$`),
}

// warningOrError matches a warning or error line of klog's text format
// ("W1122 23:32:49.016244 ..."), of the embedded etcd's console format
// ("2026-11-22T23:32:50.830Z\twarn\t...") and of the etcd client's JSON.
var warningOrError = regexp.MustCompile(`^[WEF]\d{4} |\t(warn|error|dpanic|panic|fatal)\t|"level":"(warn|error)"`)

// A normal start on a fresh data dir prints the ready banner on stdout and
// nothing else, up to the controllers' first work: no line on stderr, so
// none a warning or an error either; the stop adds the line that says it
// stops. -v=2 brings back the detail of the libraries.
//
// What the stop itself logs is not checked for warnings: a stop while the
// controllers still work through their start-up queues interrupts their
// requests, which upstream's controllers and API server log as errors (as
// with kube-controller-manager stopped mid-work).
func TestQuietStartAndStop(t *testing.T) {
	c := startCluster(t, Spec{})
	waitForControllers(t, c)
	started := logLines(readFile(t, c.StderrPath))
	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stdout := logLines(readFile(t, c.StdoutPath))
	if len(stdout) != len(readyLines) {
		t.Errorf("a start wrote %d lines to stdout (%s), want the %d of the ready banner:\n%s", len(stdout), c.StdoutPath, len(readyLines), strings.Join(stdout, "\n"))
	}
	for i, line := range stdout[:min(len(stdout), len(readyLines))] {
		if !readyLines[i].MatchString(line) {
			t.Errorf("line %d of stdout is %q, want one matching %s", i+1, line, readyLines[i])
		}
	}
	if len(started) > 0 {
		t.Errorf("a start wrote %d lines to stderr (%s), want none; the first ones:\n%s", len(started), c.StderrPath, strings.Join(started[:min(len(started), logTailLines)], "\n"))
	}
	for _, line := range started {
		if warningOrError.MatchString(line) {
			t.Errorf("a normal start logged a warning or error: %s", line)
		}
	}
	stopped := logLines(readFile(t, c.StderrPath))[len(started):]
	if !slices.ContainsFunc(stopped, func(line string) bool {
		return strings.Contains(line, "Stopping; send SIGTERM or SIGINT again to exit at once")
	}) {
		t.Errorf("the stop did not say so; it logged:\n%s", strings.Join(stopped, "\n"))
	}

	t.Run("-v=2", func(t *testing.T) {
		c := startCluster(t, Spec{Flags: []string{"-v=2"}})
		if err := provider.Stop(t.Context(), c); err != nil {
			t.Fatalf("stop: %v", err)
		}
		// client-go logs it at V(0) for every informer it waits for.
		if stderr := readFile(t, c.StderrPath); !strings.Contains(stderr, `"Caches are synced"`) {
			t.Errorf("with -v=2 the libraries' informational messages are still left out (%s)", c.StderrPath)
		}
	})
}

// waitForControllers waits until the in-process controllers have done
// their first work: the root CA publisher has written kube-root-ca.crt.
func waitForControllers(t *testing.T, c *Cluster) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, readyTimeout, true, func(context.Context) (bool, error) {
		return runKubectl(t, c, "", "get", "configmap", "kube-root-ca.crt", "--namespace=default").ExitCode == 0, nil
	})
	if err != nil {
		t.Fatalf("no configmap kube-root-ca.crt within %s of the ready line: are the controllers running? %v", readyTimeout, err)
	}
}

// logLines returns the non-empty lines of a log.
func logLines(log string) []string {
	var lines []string
	for line := range strings.Lines(log) {
		if line = strings.TrimRight(line, "\n"); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
