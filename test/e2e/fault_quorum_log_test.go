//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	// quorumLossMinute is the window of issue 26's bound: the first minute
	// of a quorum loss, the repeat limits' longest period.
	quorumLossMinute = time.Minute
	// maxFirstMinuteLines bounds what a replica writes in that minute, all
	// of its sources together: its own and the libraries' klog lines, its
	// embedded etcd member's and the API server's etcd client's.
	maxFirstMinuteLines = 100
)

var (
	// klogCount is a count the repeat limit of klog's lines writes, with
	// the call's location.
	klogCount = regexp.MustCompile(`^[IWEF]\d{4} [\d:.]+\s+\d+ (\S+:\d+)\] message repeated `)
	// zapConsole starts a line of the embedded etcd member's logger, zap's
	// console encoder: time and level, tab-separated.
	zapConsole = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\S+\t[a-z]+\t`)
)

// While etcd has no quorum, a replica that still runs logs at most
// maxFirstMinuteLines lines in the first minute, whatever writes them, and
// every message that is held back as a repeat was written in full first.
// On the joined provider the replica's own member is the one left without
// its peers; on the external-etcd provider both replicas are cut off.
func TestFaultQuorumLossFirstMinuteLog(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		requireActions(t, p, ActionStart, ActionEtcdMembers, ActionLogs, ActionReplicas)
		etcd := p.(EtcdMembers)
		c := startClusterWith(t, p, Spec{})
		if members := etcd.Members(c); members != 3 {
			t.Fatalf("the etcd cluster has %d members; this spec stops two of three", members)
		}
		if err := etcd.StopMember(t.Context(), c, 2); err != nil {
			t.Fatal(err)
		}

		linesBefore := make([]int, len(c.Replicas))
		for i, r := range c.Replicas {
			linesBefore[i] = len(logLines(readFile(t, r.StderrPath)))
		}
		if err := etcd.StopMember(t.Context(), c, 1); err != nil {
			t.Fatal(err)
		}
		lost := time.Now()
		untilReadyz(t, c, false, time.Minute)
		// The window is the measurement, not a wait for a condition. It
		// starts before the second member stops, so that it holds all of
		// the first minute and a little more.
		select {
		case <-time.After(time.Until(lost.Add(quorumLossMinute))):
		case <-t.Context().Done():
			return
		}

		checked := 0
		for i, r := range c.Replicas {
			if !serves(t.Context(), t, r) {
				continue // stopped with its member (joined)
			}
			checked++
			log := logLines(readFile(t, r.StderrPath))
			checkFirstMinuteLog(t, fmt.Sprintf("replica %d", i), log[:linesBefore[i]], log[linesBefore[i]:])
		}
		if checked == 0 {
			t.Fatal("no replica serves with two of three etcd members stopped; nothing was measured")
		}
	})
}

// serves reports whether c answers HTTP at all (/livez, whatever its
// status): whether its process runs.
func serves(ctx context.Context, t *testing.T, c *Cluster) bool {
	_, err := healthStatus(ctx, healthClient(t, c, 5*time.Second), c, "/livez")
	return err == nil
}

// checkFirstMinuteLog checks window, the lines who wrote in the first
// minute of a quorum loss after earlier ones: at most maxFirstMinuteLines;
// a message held back as a repeat (counted by klog's repeat limit, or a zap
// entry with heldBack) was written in full before; and the etcd client's
// retries, which fail all minute, were written at least once.
func checkFirstMinuteLog(t *testing.T, who string, earlier, window []string) {
	t.Helper()
	sources := map[string]int{}
	written := map[string]bool{}
	for _, line := range earlier {
		noteWritten(line, written)
	}
	for _, line := range window {
		sources[logSource(line)]++
		if m := klogCount.FindStringSubmatch(line); m != nil && !written["klog "+m[1]] {
			t.Errorf("%s counted repeats of the call at %s without writing its first entry: %s", who, m[1], line)
		}
		if e, ok := zapEntry(line); ok && e.HeldBack > 0 && !written["zap "+e.Logger+" "+e.Msg] {
			t.Errorf("%s held back %q without writing it first: %s", who, e.Msg, line)
		}
		noteWritten(line, written)
	}
	var bySource []string
	for source, n := range sources {
		bySource = append(bySource, fmt.Sprintf("%s %d", source, n))
	}
	sort.Strings(bySource)
	t.Logf("%s in the first minute without quorum: %d lines (%s)", who, len(window), strings.Join(bySource, ", "))
	if testing.Verbose() {
		t.Logf("%s's lines:\n%s", who, strings.Join(window, "\n"))
	}
	if len(window) > maxFirstMinuteLines {
		t.Errorf("%s wrote %d lines in the first minute without quorum, want at most %d; the first ones:\n%s",
			who, len(window), maxFirstMinuteLines, strings.Join(window[:min(len(window), logTailLines)], "\n"))
	}
	if sources[sourceEtcdClient] == 0 {
		t.Errorf("%s wrote no line of the etcd client in the first minute without quorum: its retries' first warning is lost", who)
	}
}

// noteWritten records the call (klog) or the message (zap) of line in
// written, unless line is a count of entries held back.
func noteWritten(line string, written map[string]bool) {
	if m := klogLocation.FindStringSubmatch(line); m != nil && !klogCount.MatchString(line) {
		written["klog "+m[1]] = true
	}
	if e, ok := zapEntry(line); ok && e.HeldBack == 0 {
		written["zap "+e.Logger+" "+e.Msg] = true
	}
}

// zapLine is what the spec reads of a zap entry.
type zapLine struct {
	Logger   string `json:"logger"`
	Msg      string `json:"msg"`
	HeldBack int    `json:"heldBack"`
}

// zapEntry reads line as an entry of one of etcd's zap loggers: JSON (the
// API server's etcd client) or console (the embedded etcd member).
func zapEntry(line string) (zapLine, bool) {
	var e zapLine
	if strings.HasPrefix(line, "{") {
		return e, json.Unmarshal([]byte(line), &e) == nil && e.Msg != ""
	}
	if !zapConsole.MatchString(line) {
		return e, false
	}
	// Time, level, the logger's name if it has one, message, and the
	// fields as JSON if there are any.
	cols := strings.Split(line, "\t")
	if last := cols[len(cols)-1]; strings.HasPrefix(last, "{") {
		_ = json.Unmarshal([]byte(last), &e)
		cols = cols[:len(cols)-1]
	}
	e.Msg = cols[len(cols)-1]
	if len(cols) > 3 {
		e.Logger = cols[2]
	}
	return e, len(cols) >= 3
}

const sourceEtcdClient = "the etcd client (zap JSON)"

// logSource names what wrote line, by its format.
func logSource(line string) string {
	if e, ok := zapEntry(line); ok {
		if e.Logger == "etcd-client" {
			return sourceEtcdClient
		}
		return "embedded etcd (zap console)"
	}
	switch {
	case klogLocation.MatchString(line):
		return "klog warnings and errors"
	case len(line) > 0 && strings.ContainsRune("IWEF", rune(line[0])):
		return "klog"
	}
	return "other"
}
