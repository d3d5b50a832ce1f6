package cluster

import (
	"context"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

const (
	// DefaultLearnerTimeout is how long a learner may take to catch up
	// before the cluster removes it.
	DefaultLearnerTimeout = 10 * time.Minute
	// promotePoll is how often a leader with learners tries to promote
	// them: a joining server waits for its promotion before it serves.
	promotePoll = 100 * time.Millisecond
	// idlePoll is how often a leader looks for learners when it has none.
	idlePoll = 2 * time.Second
)

// Promoter promotes the cluster's learners to voters once they have caught
// up with the leader, and removes a learner that has not caught up within
// LearnerTimeout (a server that joined and died, or cannot reach the
// leader), so that it does not hold the one learner place forever. Every
// server runs one; only the one whose member leads acts, so the decisions
// are the leader's, which knows the learners' progress.
type Promoter struct {
	// Etcd is a client of this server's member.
	Etcd *clientv3.Client
	// IsLeader reports whether this server's member leads the cluster.
	IsLeader func() bool
	// LearnerTimeout bounds a learner's catching up.
	LearnerTimeout time.Duration

	// firstSeen is when this leader first saw each learner.
	firstSeen map[uint64]time.Time
}

// Run promotes and removes learners until ctx is done.
func (p *Promoter) Run(ctx context.Context) {
	p.firstSeen = map[uint64]time.Time{}
	for {
		interval := idlePoll
		if p.IsLeader() {
			if learners := p.sync(ctx); learners > 0 {
				interval = promotePoll
			}
		} else {
			// Another leader may have seen them for longer: it decides.
			clear(p.firstSeen)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// sync promotes the learners that caught up and removes the ones that
// stalled; it returns how many learners are left.
func (p *Promoter) sync(ctx context.Context) int {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := p.Etcd.MemberList(ctx)
	if err != nil {
		logger.V(2).Info("Cannot list etcd members", "err", err)
		return 0
	}
	learners := 0
	seen := map[uint64]bool{}
	now := time.Now()
	for _, m := range list.Members {
		if !m.IsLearner {
			continue
		}
		seen[m.ID] = true
		id := strconv.FormatUint(m.ID, 16)
		_, err := p.Etcd.MemberPromote(ctx, m.ID)
		if err == nil {
			logger.Info("Promoted etcd learner to voter", "member", m.Name, "memberID", id)
			delete(p.firstSeen, m.ID)
			continue
		}
		if rpctypes.ErrorDesc(err) != rpctypes.ErrorDesc(rpctypes.ErrGRPCLearnerNotReady) {
			logger.V(2).Info("Cannot promote etcd learner yet", "member", m.Name, "memberID", id, "err", err)
		}
		first, ok := p.firstSeen[m.ID]
		if !ok {
			p.firstSeen[m.ID] = now
			first = now
		}
		if now.Sub(first) < p.LearnerTimeout {
			learners++
			continue
		}
		if _, err := p.Etcd.MemberRemove(ctx, m.ID); err != nil {
			logger.Error(err, "Cannot remove stalled etcd learner", "member", m.Name, "memberID", id)
			learners++
			continue
		}
		logger.Info("Removed etcd learner that did not catch up in time; the server must join again with a new token and an empty data dir", "member", m.Name, "memberID", id, "learnerTimeout", p.LearnerTimeout)
		delete(p.firstSeen, m.ID)
	}
	for id := range p.firstSeen {
		if !seen[id] {
			delete(p.firstSeen, id)
		}
	}
	return learners
}
