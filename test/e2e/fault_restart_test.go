//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// restartWriters is how many clients write while the control plane stops.
const restartWriters = 8

// A control plane stopped by SIGTERM while clients write answers every
// create it accepted, starts again with every create it acknowledged, and
// its etcd finds nothing to repair or recover. With an external etcd the
// members run on and there is no etcd of the replica's own to recover: it
// starts none (the --embedded-etcd-* flags are ignored) and its log tells
// of no recovery either.
func TestFaultGracefulRestart(t *testing.T) {
	forEveryProvider(t, func(t *testing.T, p Provider) {
		requireActions(t, p, ActionStart, ActionRestart, ActionLogs)
		c := startClusterWith(t, p, Spec{Flags: etcdInfoLogs})
		// The joined provider's servers stop and start etcd members too,
		// but embedded ones: only an etcd cluster of the provider's own
		// is external.
		_, external := c.infra.(*etcdCluster)
		embedded := !external
		w := startConfigMapWriters(t, c, "fault-restart", restartWriters)
		w.waitForAcks(t, acksPerCycle, time.Minute)

		firstStderr := c.StderrPath
		start := time.Now()
		if err := p.Restart(t.Context(), c); err != nil {
			t.Fatalf("restart: %v", err)
		}
		t.Logf("stopped by SIGTERM and ready again %s later", time.Since(start).Round(time.Millisecond))
		w.waitForAcks(t, acksPerCycle, time.Minute)
		w.stop()
		acked, unacked := w.checkAcknowledgedStored(t, c)
		failures, kinds := w.failed()
		t.Logf("%d acknowledged creates checked, %d more stored whose answer was lost; %d failed creates, of these kinds:\n%s",
			acked, unacked, failures, strings.Join(kinds, "\n"))
		// A graceful stop finishes the requests it accepted: none is
		// stored without its answer reaching the client.
		if unacked > 0 {
			t.Errorf("%d creates were stored but their answer was lost across a stop by SIGTERM", unacked)
		}

		// Proof that the stop was the graceful one.
		if n := strings.Count(readFile(t, firstStderr), stoppingLine); n != 1 {
			t.Errorf("the stopped run's stderr (%s) has %d lines %q, want 1", firstStderr, n, stoppingLine)
		}
		stderr := readFile(t, c.StderrPath)
		// The line proves that etcd's info lines reach the log, so the
		// absence of recovery messages means something; with an external
		// etcd it proves that no etcd was embedded.
		const memberRestarted = "restarting local member"
		switch got := strings.Contains(stderr, memberRestarted); {
		case embedded && !got:
			t.Errorf("second start's stderr (%s) lacks etcd's %q line: are etcd's info logs lost, or did it start a new member?", c.StderrPath, memberRestarted)
		case !embedded && got:
			t.Errorf("with --etcd-servers, the second start's stderr (%s) has etcd's %q line: it ran an etcd of its own", c.StderrPath, memberRestarted)
		}
		if msgs := recoveryMessages(c, stderr); len(msgs) > 0 {
			t.Errorf("after a stop by SIGTERM, the second start's log tells of recovered or repaired data (%s):\n%s", c.StderrPath, strings.Join(msgs, "\n"))
		}
	})
}
