//go:build e2e

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	// killWriters is how many clients write while the control plane is
	// killed.
	killWriters = 32
	// killCycles is how many times it is killed and started again.
	killCycles = 10
	// acksPerCycle is how many creates the restarted control plane
	// acknowledges before it is killed again: the load runs against it.
	acksPerCycle = 200
)

// readyLine is the line the binary prints on stdout once ready, with the
// time since its process started, as it measured it.
var readyLine = regexp.MustCompile(`is ready \(([\d.]+)s\)`)

// A control plane killed (SIGKILL) while 32 clients write serves again
// after its restart, and every create it acknowledged before the kill is
// stored. With replicas, the one the clients write to is killed. How soon
// it serves again is a figure of make bench (hack/bench/restart, with its
// growth over the cycles), not an assertion here: a timed bound fails on a
// busy machine without anything being wrong.
func TestFaultKillUnderLoad(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		requireActions(t, p, ActionStart, ActionKill, ActionRestart)
		c := startClusterWith(t, p, Spec{})
		w := startConfigMapWriters(t, c, "fault-kill", killWriters)
		var readies []time.Duration
		for cycle := 1; cycle <= killCycles; cycle++ {
			w.waitForAcks(t, acksPerCycle, time.Minute)
			p.Kill(c)
			// From just before the process starts: an upper bound of
			// the time from its start to its first 200 on /readyz.
			start := time.Now()
			if err := p.Restart(t.Context(), c); err != nil {
				t.Fatalf("cycle %d: starting the control plane again after SIGKILL: %v", cycle, err)
			}
			ready := untilReadyz(t, c, true, readyTimeout).Sub(start)
			readies = append(readies, ready.Round(time.Millisecond))
			own := "?"
			if m := readyLine.FindStringSubmatch(readFile(t, c.StdoutPath)); m != nil {
				own = m[1] + "s"
			}
			acked, unacked := w.checkAcknowledgedStored(t, c)
			t.Logf("cycle %d: /readyz 200 %s after the restart (the binary's own figure: %s); %d acknowledged creates checked, %d more stored, not (yet) acknowledged",
				cycle, ready.Round(time.Millisecond), own, acked, unacked)
		}
		w.stop()
		acked, unacked := w.checkAcknowledgedStored(t, c)
		failures, kinds := w.failed()
		t.Logf("after %d kills: ready after each restart %v; %d acknowledged creates checked, %d more stored whose answer was lost; %d failed creates, of these kinds:\n%s",
			killCycles, readies, acked, unacked, failures, strings.Join(kinds, "\n"))
	})
}
