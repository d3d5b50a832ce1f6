//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/test/internal/controllerslease"
)

// The specs of issue 25: servers that form a highly available control plane
// with nothing but the binary (joined_provider_test.go starts them). They
// run on the joined provider whatever $SGCP_E2E_PROVIDERS says, as the
// tests of the binary run on the binary provider.

// Three servers join: the first with --cluster-init, two with a token. Each
// serves what was written through the others, the membership lists three
// voters at their own peer URLs, and one server holds the controllers' Lease.
func TestJoinedThreeServersJoin(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	for i, took := range c.infra.(*joinedCluster).joinTimes {
		t.Logf("server %d: from the start with --join to ready: %s", i+1, took.Round(time.Millisecond))
	}
	bothServe(t, c.Replicas)

	members := clusterMembers(t, c)
	if len(members) != len(c.Replicas) {
		t.Fatalf("cluster members lists %d members, want %d: %+v", len(members), len(c.Replicas), members)
	}
	for i, s := range c.Replicas {
		m := memberAt(members, peerURLOf(s))
		switch {
		case m == nil:
			t.Errorf("cluster members lists no member at server %d's peer URL %s: %+v", i, peerURLOf(s), members)
		case m.Learner:
			t.Errorf("server %d's member %s is still a learner once the server is ready", i, m.Name)
		}
	}
	holder := controllerslease.WaitForHolder(t, clientset(t, c), "", readyTimeout)
	t.Logf("the controllers' Lease is held by %s, replica %d", holder, leaderReplica(t, c.Replicas, clientset(t, c), holder))
}

// Two servers that join at once both join: the first server admits one
// learner at a time, so one join waits for the other's promotion instead of
// failing.
func TestJoinedTwoJoinAtOnce(t *testing.T) {
	p := joined()
	dir := t.TempDir()
	first := startServerOf(t, p, dir, 0, "--cluster-init")
	token := createToken(t, first, time.Hour, false)

	var wg sync.WaitGroup
	servers := make([]*Cluster, 3)
	errs := make([]error, 3)
	took := make([]time.Duration, 3)
	for i := 1; i <= 2; i++ {
		wg.Go(func() {
			start := time.Now()
			servers[i], errs[i] = p.startServer(t.Context(), Spec{WorkDir: dir}, i, joinFlags(first, token))
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers[1:] {
			if s != nil {
				p.Kill(s)
				logTailOnFailure(t, s)
			}
		}
	})
	for i := 1; i <= 2; i++ {
		if errs[i] != nil {
			t.Fatalf("server %d, joining at the same time as the other: %v", i, errs[i])
		}
		t.Logf("server %d: from the start with --join to ready: %s", i, took[i].Round(time.Millisecond))
	}
	// The proof that the joins met: the first server made one wait.
	const waited = "Another member is joining; this join waits for its promotion"
	if n := strings.Count(readFile(t, first.StderrPath), waited); n != 1 {
		t.Errorf("the first server's log (%s) has %d lines %q, want 1: one join waits for the other", first.StderrPath, n, waited)
	}
	servers[0] = first
	bothServe(t, servers)
	if members := clusterMembers(t, first); len(members) != 3 {
		t.Errorf("cluster members lists %d members, want 3: %+v", len(members), members)
	}
}

// A server SIGKILLed while clients write through the other two: the writes
// go on, every acknowledged one is stored, and when the killed server held
// the controllers' Lease another server takes it once it expires.
func TestJoinedKillUnderWriteLoad(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{Flags: []string{
		"--leader-elect-lease-duration=" + leaseDuration.String(), "--leader-elect-retry-period=" + retryPeriod.String()}})
	cs := clientset(t, c)
	holder := controllerslease.WaitForHolder(t, cs, "", readyTimeout)
	victim := leaderReplica(t, c.Replicas, cs, holder)
	var writers []*configMapWriters
	var survivors []*Cluster
	for i, s := range c.Replicas {
		if i != victim {
			survivors = append(survivors, s)
			writers = append(writers, startConfigMapWriters(t, s, fmt.Sprintf("joined-kill-%d", i), killWriters/2))
		}
	}
	for _, w := range writers {
		w.waitForAcks(t, acksPerCycle, time.Minute)
	}

	killed := time.Now()
	p.Kill(c.Replicas[victim])
	t.Logf("killed server %d, which held the controllers' Lease as %s", victim, holder)
	survivor := clientset(t, survivors[0])
	takeover := measureUntil(t, killed, leaseDuration+time.Minute, "another server holding the controllers' Lease", func(ctx context.Context) (bool, error) {
		h, err := controllerslease.Holder(ctx, survivor)
		return h != "" && h != holder, err
	})
	// Writes through the servers that stay go on after the kill.
	for _, w := range writers {
		w.waitForAcks(t, acksPerCycle, time.Minute)
	}
	newHolder, err := controllerslease.Holder(t.Context(), survivor)
	if err != nil {
		t.Fatal(err)
	}
	if got := leaderReplica(t, c.Replicas, survivor, newHolder); got == victim {
		t.Errorf("the new Lease holder %s is the killed server %d", newHolder, victim)
	}
	t.Logf("the controllers' Lease moved %s after the kill (--leader-elect-lease-duration=%s, --leader-elect-retry-period=%s)",
		takeover.Round(time.Millisecond), leaseDuration, retryPeriod)

	for _, w := range writers {
		w.stop()
	}
	// Every acknowledged write is stored, as each server that stayed reads
	// it, and as the killed one does once it is back.
	if err := p.Restart(t.Context(), c.Replicas[victim]); err != nil {
		t.Fatalf("starting server %d again after SIGKILL: %v", victim, err)
	}
	for i, w := range writers {
		for j, s := range c.Replicas {
			acked, unacked := w.checkAcknowledgedStored(t, s)
			failures, kinds := w.failed()
			t.Logf("writers through server %d, read through server %d: %d acknowledged creates checked, %d more stored whose answer was lost; %d failed creates: %q",
				serverIndex(c, survivors[i]), j, acked, unacked, failures, kinds)
		}
	}
}

// With two of three servers down the survivor's etcd member has no quorum:
// its /readyz fails. Once one of the two is back, both serve again, and so
// does the third once started.
func TestJoinedTwoOfThreeDown(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	cms := clientset(t, c).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-two-down"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if err := p.Stop(t.Context(), c.Replicas[i]); err != nil {
			t.Fatalf("stopping server %d: %v", i, err)
		}
	}
	lost := time.Now()
	notReady := untilReadyz(t, c, false, time.Minute).Sub(lost)
	t.Logf("two of three servers stopped: the survivor's /readyz failed %s after the second stopped", notReady.Round(time.Millisecond))
	if verbose := healthBody(t, c, "/readyz?verbose"); !strings.Contains(verbose, "[-]etcd") {
		t.Errorf("with two of three servers down, the survivor's /readyz?verbose does not name an etcd check as failing:\n%s", verbose)
	}

	back := time.Now()
	if err := p.Restart(t.Context(), c.Replicas[1]); err != nil {
		t.Fatalf("starting server 1 again: %v", err)
	}
	ready := untilReadyz(t, c, true, time.Minute).Sub(back)
	t.Logf("server 1 back: the survivor ready again %s after server 1 was started", ready.Round(time.Millisecond))
	if err := p.Restart(t.Context(), c.Replicas[2]); err != nil {
		t.Fatalf("starting server 2 again: %v", err)
	}
	bothServe(t, c.Replicas)
	for i, s := range c.Replicas {
		if _, err := clientset(t, s).CoreV1().ConfigMaps("default").Get(t.Context(), "before-two-down", metav1.GetOptions{}); err != nil {
			t.Errorf("server %d does not read what was written before two servers stopped: %v", i, err)
		}
	}
}

// A member removed with "cluster remove": its server stops and says why, a
// restart of it is refused, and the other two keep serving with two members.
func TestJoinedMemberRemoved(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	removed := c.Replicas[2]
	name := memberAt(clusterMembers(t, c), peerURLOf(removed))
	if name == nil {
		t.Fatalf("cluster members lists no member at server 2's peer URL %s", peerURLOf(removed))
	}
	// etcd removes a member only once every voter has been connected for
	// 5 s, which the last to join may not have been yet; the command says
	// to try again, as a user would.
	var res commandResult
	eventually(t, "cluster remove "+name.Name+" succeeding", func(context.Context) (bool, error) {
		res = runBinary(t, "cluster", "remove", name.Name, "--kubeconfig="+c.Kubeconfig)
		if res.ExitCode != 0 && !strings.Contains(res.Stderr, "try again") {
			return false, fmt.Errorf("cluster remove %s: exit code %d; stderr:\n%s", name.Name, res.ExitCode, res.Stderr)
		}
		return res.ExitCode == 0, nil
	})
	r := removed.impl.(*binaryRun)
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		t.Fatalf("server 2 still runs %s after its member %s was removed", stopTimeout, name.Name)
	}
	exit := r.exitError(removed)
	const stopsWhy = "this server's etcd member was removed from its cluster"
	if exit.Code == 0 || !strings.Contains(exit.Stderr, stopsWhy) {
		t.Errorf("server 2 ended with exit code %d after its member was removed, want non-zero and stderr saying %q; last line: %s", exit.Code, stopsWhy, exit.LastStderrLine())
	}

	// Not Restart: that stops a run first, and this one ended by itself.
	err := p.binary.launch(t.Context(), removed)
	var restartExit *ExitError
	if !errors.As(err, &restartExit) {
		t.Fatalf("server 2 restarted after its member was removed: %v; want it to refuse", err)
	}
	const refused = "no longer count member"
	if !strings.Contains(restartExit.Stderr, refused) {
		t.Errorf("the refused restart's stderr does not say %q; last line: %s", refused, restartExit.LastStderrLine())
	}
	t.Logf("the removed server's restart was refused: %s", restartExit.LastStderrLine())

	bothServe(t, c.Replicas[:2])
	if members := clusterMembers(t, c); len(members) != 2 || memberAt(members, peerURLOf(removed)) != nil {
		t.Errorf("cluster members after the removal: %+v, want the two other servers' members", members)
	}
}

// Joins with a token the cluster does not take are refused: the joiner
// exits with an error saying so and what to do, and no member is added.
func TestJoinedRefusedTokens(t *testing.T) {
	p := joined()
	dir := t.TempDir()
	first := startServerOf(t, p, dir, 0, "--cluster-init")
	// The right cluster's CA and token ID, a wrong secret: the token's
	// form is sgcp::sha256:<CA hash>::<ID>.<secret>.
	valid := createToken(t, first, time.Hour, false)
	dot := strings.LastIndex(valid, ".")
	wrong := valid[:dot+1] + strings.Repeat("x", len(valid)-dot-1)

	expired := createToken(t, first, time.Second, false)
	// The point: the token's TTL runs out before it is used.
	time.Sleep(2 * time.Second)

	used := createToken(t, first, time.Hour, true)
	usedBy := startServerOf(t, p, dir, 1, joinFlags(first, used)...)
	t.Logf("server 1 joined with the single-use token")

	for i, tc := range []struct{ name, token string }{
		{"wrong secret", wrong},
		{"expired", expired},
		{"single-use, used already", used},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{WorkDir: filepath.Join(dir, "refused", fmt.Sprint(i))}
			err := startServerExpectingFailure(t, p, spec, 2, joinFlags(first, tc.token))
			const says = "the server refused the token"
			if !strings.Contains(err.Stderr, says) || !strings.Contains(err.Stderr, "create a new one") {
				t.Errorf("the joiner's stderr does not say %q and to create a new one; last line: %s", says, err.LastStderrLine())
			}
			t.Logf("exit code %d: %s", err.Code, err.LastStderrLine())
		})
	}
	if members := clusterMembers(t, first); len(members) != 2 {
		t.Errorf("after the refused joins cluster members lists %d members, want the 2 that joined: %+v", len(members), members)
	}
	bothServe(t, []*Cluster{first, usedBy})
}

// All three servers stopped, then started together (no one of them serves
// before a quorum is back): all serve again, with what they stored.
func TestJoinedRestartAll(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	bothServe(t, c.Replicas)
	// The last one stops without a quorum, as when a user shuts the whole
	// cluster down; it must stop cleanly all the same.
	for i := len(c.Replicas) - 1; i >= 0; i-- {
		if err := p.Stop(t.Context(), c.Replicas[i]); err != nil {
			var exit *ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("stopping server %d: %v", i, err)
			}
			t.Errorf("server %d, stopped by SIGTERM, ended with exit code %d: %s", i, exit.Code, exit.LastStderrLine())
		}
	}
	start := time.Now()
	errs := make([]error, len(c.Replicas))
	var wg sync.WaitGroup
	for i, s := range c.Replicas {
		wg.Go(func() { errs[i] = p.Restart(t.Context(), s) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("starting the three servers again: %v", err)
	}
	t.Logf("all three stopped, then started together: ready %s later", time.Since(start).Round(time.Millisecond))
	for i, s := range c.Replicas {
		cms := clientset(t, s).CoreV1().ConfigMaps("default")
		for j := range c.Replicas {
			if _, err := cms.Get(t.Context(), writtenThrough(j), metav1.GetOptions{}); err != nil {
				t.Errorf("after the restart server %d does not read what was written through server %d: %v", i, j, err)
			}
		}
	}
}

// "snapshot restore" on a stopped server's data dir is refused while the
// other members run (they would go on as the old cluster beside the
// restored one), and leaves the data dir as it was: the server starts again
// on it.
func TestJoinedSnapshotRestoreRefusedWhileOthersRun(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	snapshot := filepath.Join(t.TempDir(), "cluster.db")
	if res := runBinary(t, "snapshot", "save", snapshot, "--data-dir="+c.DataDir); res.ExitCode != 0 {
		t.Fatalf("snapshot save: exit code %d; stderr:\n%s", res.ExitCode, res.Stderr)
	}
	s := c.Replicas[2]
	if err := p.Stop(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	res := runBinary(t, "snapshot", "restore", snapshot, "--data-dir="+s.DataDir)
	const refused = "cannot restore while other members of this server's cluster run"
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, refused) {
		t.Errorf("snapshot restore on server 2 while the others run: exit code %d, want non-zero and stderr saying %q; stderr:\n%s", res.ExitCode, refused, res.Stderr)
	}
	t.Logf("refused: %s", strings.TrimSpace(res.Stderr))
	if left := replacedDirs(t, s.DataDir); len(left) > 0 {
		t.Errorf("the refused restore left %v in server 2's data dir", left)
	}
	if err := p.Restart(t.Context(), s); err != nil {
		t.Fatalf("starting server 2 again after the refused restore: %v", err)
	}
	bothServe(t, c.Replicas)
}

// A server that comes back on another address (stopped on 127.0.0.3,
// started on 127.0.0.4 with the same data dir) serves, and its member's
// peer URL in the cluster follows it.
func TestJoinedAddressChange(t *testing.T) {
	p := joined()
	c := startClusterWith(t, p, Spec{})
	s := c.Replicas[2]
	oldURL := peerURLOf(s)
	if err := p.Stop(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	const moved = "127.0.0.4"
	port, err := freePortOn(moved)
	if err != nil {
		t.Fatal(err)
	}
	s.BindAddress, s.Port = moved, port
	if err := p.Restart(t.Context(), s); err != nil {
		t.Fatalf("starting server 2 again on %s: %v", moved, err)
	}
	if !strings.Contains(s.URL, moved) {
		t.Errorf("server 2, started on %s, printed a kubeconfig for %s", moved, s.URL)
	}
	bothServe(t, c.Replicas)
	newURL := peerURLOf(s)
	eventually(t, "cluster members showing server 2's new peer URL "+newURL, func(context.Context) (bool, error) {
		members := clusterMembers(t, c)
		return memberAt(members, newURL) != nil && memberAt(members, oldURL) == nil, nil
	})
	t.Logf("server 2 moved to %s: cluster members shows its peer URL %s, no longer %s", moved, newURL, oldURL)
}
