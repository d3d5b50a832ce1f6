//go:build robustness

package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
)

// pauseFor is how long pause holds a server stopped: longer than the
// election timeout of a member of a cluster (1 s), so its peers elect
// without it.
const pauseFor = 3 * time.Second

// partitionFor is how long a partition keeps a member off its peers:
// several election timeouts, so that the others elect without it and a
// leader cut off steps down.
const partitionFor = 5 * time.Second

// fault is a named, reusable injector: inject applies it to t while the
// traffic runs, heals it, and returns what it did, the servers to wait for
// until they are ready again, and when the healing began.
type fault struct {
	name string
	// needsMembers: skipped on a topology whose members cannot be taken
	// one at a time (single); needsJoined: on one whose members are not
	// the servers' own (single, external).
	needsMembers, needsJoined bool
	inject                    func(ctx context.Context, t *topology, r *rand.Rand) (string, []*server, time.Time, error)
}

var faults = []fault{
	{name: "kill-leader", inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		s, err := leaderOrFollower(ctx, t, true)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		return killAndRestart(ctx, t, s)
	}},
	{name: "kill-follower", needsMembers: true, inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		s, err := leaderOrFollower(ctx, t, false)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		return killAndRestart(ctx, t, s)
	}},
	{name: "pause", inject: func(ctx context.Context, t *topology, r *rand.Rand) (string, []*server, time.Time, error) {
		rs := running(t)
		if len(rs) == 0 {
			return "", nil, time.Time{}, errors.New("no process runs to pause")
		}
		s := rs[r.IntN(len(rs))]
		s.pause()
		sleep(ctx, pauseFor)
		healed := time.Now()
		s.resume()
		return fmt.Sprintf("SIGSTOP %s for %s, then SIGCONT", s.name, pauseFor), apiServers(running(t)), healed, nil
	}},
	{name: "partition-member", needsMembers: true, inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		s, err := leaderOrFollower(ctx, t, false)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		return partition(ctx, t, s)
	}},
	{name: "partition-leader", needsMembers: true, inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		s, err := leaderOrFollower(ctx, t, true)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		return partition(ctx, t, s)
	}},
	{name: "restart-all", inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		t.mu.Lock()
		servers := append([]*server{}, t.servers...)
		t.mu.Unlock()
		for _, s := range servers {
			s.kill()
		}
		healed := time.Now()
		// etcd's own members first, when they are processes of their
		// own: the API servers check etcd as they start.
		var members, apis []*server
		for _, s := range servers {
			if s.api {
				apis = append(apis, s)
			} else {
				members = append(members, s)
			}
		}
		err := errors.Join(startTogether(ctx, members), startTogether(ctx, apis))
		return fmt.Sprintf("SIGKILL every process (%d), then start them together", len(servers)), apis, healed, err
	}},
	{name: "compact", inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		s := apiServers(running(t))[0]
		args := []string{"etcd", "compact", "--data-dir=" + s.dataDir}
		if !t.joined && t.members {
			args = append([]string{"etcd", "compact"}, t.etcdFlags...)
		}
		healed := time.Now()
		out, err := s.run(ctx, args...)
		return "etcd compact through " + s.name + ": " + out, nil, healed, err
	}},
	{name: "replace-member", needsMembers: true, needsJoined: true, inject: func(ctx context.Context, t *topology, _ *rand.Rand) (string, []*server, time.Time, error) {
		old, err := leaderOrFollower(ctx, t, false)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		members, err := t.clusterMembers(ctx)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		name := ""
		for _, m := range members {
			if t.serverOf(m) == old {
				name = m.Name
			}
		}
		via := t.anyRunningBut(old)
		if via == nil {
			return "", nil, time.Time{}, errors.New("no other server runs to remove the member through")
		}
		// etcd removes a member only once every voter has been
		// connected for 5 s, which a member joined a moment ago has not
		// (the command says so): asked again, as a user would.
		var removeErr error
		for range 30 {
			if _, removeErr = via.run(ctx, "cluster", "remove", name, "--kubeconfig="+via.kubeconfig); removeErr == nil || !strings.Contains(removeErr.Error(), "unhealthy cluster") {
				break
			}
			sleep(ctx, time.Second)
		}
		if removeErr != nil {
			return "", nil, time.Time{}, removeErr
		}
		// Its server stops once its member applies its own removal.
		select {
		case <-old.doneChan():
		case <-time.After(time.Minute):
			old.kill()
		}
		t.retire(old)
		healed := time.Now()
		s, err := t.join(ctx)
		if err != nil {
			return "", nil, time.Time{}, err
		}
		return fmt.Sprintf("remove %s (%s), join %s", old.name, name, s.name), []*server{s}, healed, nil
	}},
}

// leaderOrFollower is the server of the etcd leader, or of a voter that
// does not lead (on external, the etcd member); on a single server, that
// server.
func leaderOrFollower(ctx context.Context, t *topology, leader bool) (*server, error) {
	switch {
	case !t.members:
		return t.servers[0], nil
	case !t.joined:
		return t.etcdLeaderOrFollower(ctx, leader)
	}
	members, err := t.clusterMembers(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.Leader == leader && !m.Learner {
			if s := t.serverOf(m); s != nil {
				return s, nil
			}
		}
	}
	return nil, fmt.Errorf("no %s among %v", map[bool]string{true: "leader", false: "follower"}[leader], describe(members))
}

func describe(members []cluster.MemberStatus) []string {
	var d []string
	for _, m := range members {
		d = append(d, fmt.Sprintf("%s(%s leader=%t)", m.Name, m.Role(), m.Leader))
	}
	return d
}

func killAndRestart(ctx context.Context, t *topology, s *server) (string, []*server, time.Time, error) {
	s.kill()
	sleep(ctx, time.Second)
	healed := time.Now()
	return "SIGKILL " + s.name + ", start it again after 1 s", apiServers(running(t)), healed, s.start(ctx)
}

// partition cuts the host of s's member off its peers for partitionFor,
// then heals it; the clients reach every API server throughout.
func partition(ctx context.Context, t *topology, s *server) (string, []*server, time.Time, error) {
	if err := s.host.cut(ctx); err != nil {
		return "", nil, time.Time{}, err
	}
	sleep(ctx, partitionFor)
	healed := time.Now()
	// Healed even when the run was cancelled, so that the servers stop as
	// they would.
	if err := s.host.heal(context.WithoutCancel(ctx)); err != nil {
		return "", nil, time.Time{}, err
	}
	return fmt.Sprintf("cut %s off its peers for %s, then heal", s.name, partitionFor), apiServers(running(t)), healed, nil
}

// apiServers are the API servers among servers.
func apiServers(servers []*server) []*server {
	var apis []*server
	for _, s := range servers {
		if s.api {
			apis = append(apis, s)
		}
	}
	return apis
}

// running are the servers that run.
func running(t *topology) []*server {
	t.mu.Lock()
	defer t.mu.Unlock()
	var rs []*server
	for _, s := range t.servers {
		s.mu.Lock()
		if s.running {
			rs = append(rs, s)
		}
		s.mu.Unlock()
	}
	return rs
}

func (t *topology) anyRunningBut(not *server) *server {
	for _, s := range apiServers(running(t)) {
		if s != not {
			return s
		}
	}
	return nil
}

// retire takes a removed server out of the topology.
func (t *topology) retire(old *server) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, s := range t.servers {
		if s == old {
			t.servers = append(t.servers[:i], t.servers[i+1:]...)
			return
		}
	}
}
