package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// maxQuietLines is how many lines a normal start and stop may write to
// stderr at the default verbosity, besides the ready banner on stdout.
const maxQuietLines = 15

// warningOrError matches a warning or error line of klog's text format
// ("W1122 23:32:49.016244 ..."), of the embedded etcd's console format
// ("2026-11-22T23:32:50.830Z\twarn\t...") and of the etcd client's JSON.
var warningOrError = regexp.MustCompile(`^[WEF]\d{4} |\t(warn|error|dpanic|panic|fatal)\t|"level":"(warn|error)"`)

// A normal start on a fresh data dir prints the ready banner on stdout and
// at most a few lines on stderr, none a warning or an error, up to the stop;
// -v=2 brings back the detail of the libraries.
func TestQuietStartAndStop(t *testing.T) {
	c := startCluster(t, Spec{})
	waitForControllers(t, c)
	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if stdout := readFile(t, c.StdoutPath); !strings.Contains(stdout, "sample-generic-controlplane is ready") {
		t.Errorf("stdout (%s) lacks the ready banner:\n%s", c.StdoutPath, stdout)
	}
	lines := logLines(readFile(t, c.StderrPath))
	if len(lines) > maxQuietLines {
		t.Errorf("a start and stop wrote %d lines to stderr (%s), want at most %d; the first ones:\n%s", len(lines), c.StderrPath, maxQuietLines, strings.Join(lines[:min(len(lines), logTailLines)], "\n"))
	}
	for _, line := range lines {
		if warningOrError.MatchString(line) {
			t.Errorf("a normal start and stop logged a warning or error: %s", line)
		}
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
	deadline := time.Now().Add(readyTimeout)
	for runKubectl(t, c, "", "get", "configmap", "kube-root-ca.crt", "--namespace=default").ExitCode != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no configmap kube-root-ca.crt within %s of the ready line: are the controllers running?", readyTimeout)
		}
		time.Sleep(100 * time.Millisecond)
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
