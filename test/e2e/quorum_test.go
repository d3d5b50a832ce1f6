package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// quorumLossWindow is how long the test watches the log while etcd has
	// no quorum. On code that logs every failed watch it fills with tens of
	// thousands of lines within seconds.
	quorumLossWindow = 15 * time.Second
	// maxLinesPerCall is how often one call may log in a period of the
	// repeat limit: its first entry, then the count at the period's end.
	maxLinesPerCall = 2
	// maxQuorumLossLines bounds all of the log's lines in the window.
	maxQuorumLossLines = 100
)

var (
	// klogLocation is the file:line of a warning or error line of klog's
	// text format.
	klogLocation = regexp.MustCompile(`^[WE]\d{4} [\d:.]+\s+\d+ (\S+:\d+)\] `)
	// watchErrorsCounted is the count of the API server's failed watches.
	watchErrorsCounted = regexp.MustCompile(`watcher\.go:\d+\] message repeated (\d+) times in the last \S+: \[ watch chan error`)
)

// While etcd has lost quorum, every watch of the API server's watch cache
// fails as soon as it is made again. The control plane's log stays bounded
// (each failing call writes its first error, then counts), /readyz fails,
// and once quorum is back the control plane recovers by itself.
func TestQuorumLossLogIsBoundedAndRecovers(t *testing.T) {
	members := startEtcdCluster(t, 3)
	c := startCluster(t, Spec{Flags: etcdFlags(members...)})
	before := len(logLines(readFile(t, c.StderrPath)))

	members[1].stop()
	members[2].stop()
	untilReadyz(t, c, false, time.Minute)
	// The window is the measurement, not a wait for a condition.
	select {
	case <-time.After(quorumLossWindow):
	case <-t.Context().Done():
		return
	}
	checkQuorumLossLog(t, "the control plane", logLines(readFile(t, c.StderrPath))[before:], quorumLossWindow)

	members[1].start(t)
	members[2].start(t)
	untilReadyz(t, c, true, time.Minute)
	kubectl(t, c, "create", "configmap", "after-quorum-loss", "--namespace=default")

	// Stopping writes the counts held so far: proof that the watches
	// failed over and over, and were counted rather than written.
	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop: %v", err)
	}
	m := watchErrorsCounted.FindStringSubmatch(readFile(t, c.StderrPath))
	if m == nil {
		t.Fatalf("the log (%s) has no count of failed watches (%s)", c.StderrPath, watchErrorsCounted)
	}
	if n, _ := strconv.Atoi(m[1]); n < 100 {
		t.Errorf("the API server's watches failed %d times while etcd had no quorum, want many: did etcd lose quorum?", n)
	}
}

// checkQuorumLossLog checks lines, what a control plane (named by who, for
// messages) logged while etcd had no quorum for window (at most a minute,
// the repeat limit's period): each call logs at most maxLinesPerCall
// warnings or errors, and the log as a whole at most maxQuorumLossLines
// lines, the etcd client's and the embedded etcd member's included.
func checkQuorumLossLog(t *testing.T, who string, lines []string, window time.Duration) {
	t.Helper()
	perCall := map[string]int{}
	for _, line := range lines {
		if m := klogLocation.FindStringSubmatch(line); m != nil {
			perCall[m[1]]++
		}
	}
	t.Logf("while etcd had no quorum for %s: %d lines of %s's log", window, len(lines), who)
	for location, n := range perCall {
		if n > maxLinesPerCall {
			t.Errorf("while etcd had no quorum, %s of %s logged %d warnings or errors in %s, want at most %d", location, who, n, window, maxLinesPerCall)
		}
	}
	if len(lines) > maxQuorumLossLines {
		t.Errorf("while etcd had no quorum, %s logged %d lines in %s, want at most %d; the first ones:\n%s",
			who, len(lines), window, maxQuorumLossLines, strings.Join(lines[:min(len(lines), logTailLines)], "\n"))
	}
}
