package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.reportAll(ctx)
	c.settle() // etcd adds a member only once its peers have been connected a while
	// A learner added but not started yet has no name.
	learner, err := c.members[0].client.MemberAddAsLearner(ctx, []string{"http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	leader := c.leader(ctx)

	// Every member sees the same list, once it has applied the addition
	// (a member answers from what it has applied, without the quorum).
	for _, m := range c.members {
		var got []MemberStatus
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			got, err = m.members.List(ctx)
			return err == nil && len(got) == 4, nil
		})
		if err != nil {
			t.Fatalf("List from %s: %d members, want 4: %+v", m.name, len(got), got)
		}
		for i, s := range got[:3] {
			want := c.members[i].name
			switch {
			case s.Name != want:
				t.Errorf("List from %s: member %d is %q, want %q (by name)", m.name, i, s.Name, want)
			case s.Learner || s.Role() != "voter":
				t.Errorf("%s: role %s, want voter", s.Name, s.Role())
			case s.Leader != (s.Name == leader.name):
				t.Errorf("%s: leader %v, want %v", s.Name, s.Leader, s.Name == leader.name)
			case !s.Healthy || s.Message != "":
				t.Errorf("%s: healthy %v (%q), want healthy", s.Name, s.Healthy, s.Message)
			case s.APIServerURL != apiServerURL(s.Name):
				t.Errorf("%s: API server %q, want %q", s.Name, s.APIServerURL, apiServerURL(s.Name))
			case s.DBSize <= 0 || len(s.PeerURLs) != 1 || s.LastReport == nil:
				t.Errorf("%s: DB size %d, peer URLs %v, last report %v: want all set", s.Name, s.DBSize, s.PeerURLs, s.LastReport)
			}
		}
		l := got[3]
		if l.Name != "" || !l.Learner || l.Role() != "learner" || l.Healthy ||
			l.Message != "added to the cluster, not started yet" {
			t.Errorf("List from %s: the learner is %+v, want unnamed, learner, not healthy, not started", m.name, l)
		}
		if want := strconv.FormatUint(learner.Member.ID, 16); l.ID != want {
			t.Errorf("learner ID %s, want %s", l.ID, want)
		}
	}

	// A member whose reports stop is unhealthy once its report expires.
	c.clock.Step(45 * time.Second)
	for _, m := range c.members[:2] {
		if err := m.members.report(ctx, apiServerURL(m.name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.members[0].members.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := got[2]; s.Healthy || s.Message != "no status report for 45s" {
		t.Errorf("%s after 45s without a report: healthy %v, message %q; want unhealthy, %q", s.Name, s.Healthy, s.Message, "no status report for 45s")
	}

}

// TestRemoveRefused covers what Remove refuses without changing the
// cluster: unknown names, the leader from a follower, the last voter.
func TestRemoveRefused(t *testing.T) {
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.reportAll(ctx)
	leader, follower := c.leader(ctx), c.follower(ctx)

	err := follower.members.Remove(ctx, "member-9", false)
	if !errors.Is(err, ErrMemberNotFound) || !strings.Contains(err.Error(), `member "member-9": no such member; write one of the members' names (member-0, member-1, member-2)`) {
		t.Errorf("Remove(member-9) = %v, want ErrMemberNotFound naming the members", err)
	}

	err = follower.members.Remove(ctx, leader.name, true)
	var notLeader *NotLeaderError
	if !errors.Is(err, ErrNotLeader) || !errors.As(err, &notLeader) {
		t.Fatalf("Remove(leader) from a follower = %v, want ErrNotLeader", err)
	}
	if notLeader.Leader != leader.name || notLeader.LeaderAPIServerURL != apiServerURL(leader.name) {
		t.Errorf("NotLeaderError = %+v, want the leader %s at %s", notLeader, leader.name, apiServerURL(leader.name))
	}
	if !strings.Contains(err.Error(), "send the request to its API server, "+apiServerURL(leader.name)) {
		t.Errorf("message %q does not say where to send the request", err)
	}

	list, err := follower.client.MemberList(ctx)
	if err != nil || len(list.Members) != 3 {
		t.Errorf("after refusals: %d members (%v), want 3", len(list.Members), err)
	}
}

// TestRemoveQuorum stops one member and removes another: refused by our
// check, and with force refused by etcd's own (--strict-reconfig-check).
// Removing the stopped one is allowed.
func TestRemoveQuorum(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.settle()
	leader := c.leader(ctx)
	// Stop a follower; the remaining member that is not the leader is the
	// healthy one to try.
	var stopped, healthy *testMember
	for _, m := range c.members {
		if m == leader {
			continue
		}
		if stopped == nil {
			stopped = m
		} else {
			healthy = m
		}
	}
	stopped.stop()
	c.clock.Step(45 * time.Second)
	c.reportAll(ctx)

	err := leader.members.Remove(ctx, healthy.name, false)
	want := "removing member " + healthy.name + " would leave 2 voters of which 1 are healthy, fewer than the 2 a quorum needs (unhealthy: " + stopped.name + ")"
	if !errors.Is(err, ErrQuorum) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("Remove(%s) = %v, want ErrQuorum: %q … --force", healthy.name, err, want)
	}
	err = leader.members.Remove(ctx, healthy.name, true)
	if !errors.Is(err, ErrQuorum) || !strings.Contains(err.Error(), "etcd refused to remove member "+healthy.name) {
		t.Fatalf("Remove(%s, force) = %v, want etcd's refusal", healthy.name, err)
	}

	if err := leader.members.Remove(ctx, stopped.name, false); err != nil {
		t.Fatalf("Remove(%s), the stopped member: %v", stopped.name, err)
	}
	got, err := leader.members.List(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("List after the removal: %+v, %v; want 2 members", got, err)
	}
	if _, err := c.kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, LeaseName(stopped.name), metav1.GetOptions{}); err == nil {
		t.Errorf("the status report of %s is left after its removal", stopped.name)
	}
}

// TestRemoveForce removes a voter that etcd sees healthy while our check
// does not: the server beside another member stopped reporting.
func TestRemoveForce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.settle()
	leader := c.leader(ctx)
	var silent, target *testMember
	for _, m := range c.members {
		if m == leader {
			continue
		}
		if silent == nil {
			silent = m
		} else {
			target = m
		}
	}
	c.clock.Step(45 * time.Second)
	for _, m := range []*testMember{leader, target} {
		if err := m.members.report(ctx, apiServerURL(m.name)); err != nil {
			t.Fatal(err)
		}
	}

	if err := leader.members.Remove(ctx, target.name, false); !errors.Is(err, ErrQuorum) {
		t.Fatalf("Remove(%s) = %v, want ErrQuorum", target.name, err)
	}
	if err := leader.members.Remove(ctx, target.name, true); err != nil {
		t.Fatalf("Remove(%s, force): %v", target.name, err)
	}
	// Two voters left, one healthy: the last but one cannot go without
	// force, and the last never.
	if err := leader.members.Remove(ctx, silent.name, true); err != nil {
		t.Fatalf("Remove(%s, force): %v", silent.name, err)
	}
	err := leader.members.Remove(ctx, leader.name, true)
	if !errors.Is(err, ErrQuorum) || !strings.Contains(err.Error(), "member "+leader.name+" is the last voter") {
		t.Fatalf("Remove(%s), the last voter, with force = %v; want refused", leader.name, err)
	}
}

// TestRemoveLeader removes the leader through its own server: leadership
// moves first, and the cluster serves on.
func TestRemoveLeader(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := startTestCluster(t, 3)
	c.settle()
	c.reportAll(ctx)
	leader := c.leader(ctx)
	// Leadership goes to the first healthy voter by name.
	var next *testMember
	for _, m := range c.members {
		if m != leader {
			next = m
			break
		}
	}

	if err := leader.members.Remove(ctx, leader.name, false); err != nil {
		t.Fatalf("Remove(%s), the leader, from its server: %v", leader.name, err)
	}
	status, err := next.client.Status(ctx, next.client.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	if status.Leader != uint64(next.etcd.Server.MemberID()) {
		t.Errorf("leader is %x, want %s (%x): leadership was not moved to it", status.Leader, next.name, uint64(next.etcd.Server.MemberID()))
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := next.client.Put(ctx, "after", "removal"); err != nil {
		t.Fatalf("the cluster does not serve after the leader's removal: %v", err)
	}
	got, err := next.members.List(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("List after the removal: %+v, %v; want 2 members", got, err)
	}
}

// A member removed from its cluster is not asked for its status, which
// etcd answers with a panic once the member applied its own removal: List
// says it was removed, and the server, which stops on its own removal, does
// not crash on the way.
func TestListOfARemovedMember(t *testing.T) {
	c := startTestCluster(t, 1)
	m := c.members[0].members
	m.LocalRemoved = func() bool { return true }
	if _, err := m.List(t.Context()); err == nil || !strings.Contains(err.Error(), "was removed from its cluster") {
		t.Errorf("List on a removed member: %v; want it to say the member was removed", err)
	}
}
