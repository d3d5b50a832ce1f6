// Package cluster is the membership of the etcd cluster that the
// control planes' embedded members form: joining it with a token (Join,
// DryRunJoin, JoinHandler, and the join tokens in jointoken), promoting the
// learners that caught up (Promoter), who the members are, their roles and
// health (List), removing one without losing the quorum (Remove), both over
// the API (Handler, MembersClient), and each member's status report, a
// Lease, that lets every server see its peers' state without connecting to
// their etcd members (RunStatusReporter).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Members sees and changes the membership of the etcd cluster through the
// local member.
type Members struct {
	// etcd is a client of the local member only: Status asks its first
	// endpoint, and "the local member is the leader" means that one.
	etcd *clientv3.Client
	// kube reads and writes the members' status reports.
	kube kubernetes.Interface
	// self is the local member's name.
	self  string
	clock clock.PassiveClock
	// LocalRemoved, if set, reports whether the local member was removed
	// from its cluster (embeddedetcd.Server.Removed): etcd panics when
	// asked for the status of a member that applied its own removal
	// (RaftCluster.IsLocalMemberLearner: "failed to find local ID in
	// cluster members"), in the moment before its server stops.
	LocalRemoved func() bool
}

// NewMembers returns the membership as the local member self sees it; etcd
// must be a client of that member alone.
func NewMembers(etcd *clientv3.Client, kube kubernetes.Interface, self string) *Members {
	registerMetrics()
	return &Members{etcd: etcd, kube: kube, self: self, clock: clock.RealClock{}}
}

// member is a member's status and what etcd knows it by.
type member struct {
	MemberStatus
	id uint64
}

// view is the cluster as the local member sees it.
type view struct {
	members []member
	// local and leader are member IDs; leader is 0 while there is none.
	local, leader uint64
}

// List returns every member, by name (members not started yet last):
// membership and roles as etcd has them, the leader as the local member
// knows it, and health, database size and API server from the members'
// status reports.
func (m *Members) List(ctx context.Context) ([]MemberStatus, error) {
	v, err := m.view(ctx)
	if err != nil {
		return nil, err
	}
	out := v.statuses()
	setMemberMetrics(out)
	return out, nil
}

func (m *Members) view(ctx context.Context) (*view, error) {
	// The local member's own view: membership is the same on every
	// member once applied, and a serializable read still answers while the
	// cluster has no quorum, which is when one most wants to see it.
	list, err := m.etcd.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members: %w", err)
	}
	status, err := m.localStatus(ctx)
	if err != nil {
		return nil, err
	}
	reports, reportsErr := m.reports(ctx)
	now := m.clock.Now()

	v := &view{local: status.Header.MemberId, leader: status.Leader}
	for _, pm := range list.Members {
		mb := member{id: pm.ID, MemberStatus: MemberStatus{
			Name:     pm.Name,
			ID:       strconv.FormatUint(pm.ID, 16),
			PeerURLs: pm.PeerURLs,
			Learner:  pm.IsLearner,
			Leader:   pm.ID == status.Leader,
		}}
		switch {
		case pm.Name == "":
			// etcd learns a member's name when it first connects.
			mb.Message = "added to the cluster, not started yet"
		case reportsErr != nil:
			mb.Message = fmt.Sprintf("status reports unavailable: %v", reportsErr)
		default:
			applyReport(&mb.MemberStatus, reports[pm.Name], now)
		}
		if pm.ID == v.local {
			// Fresher than the last report.
			mb.DBSize = status.DbSize
		}
		v.members = append(v.members, mb)
	}
	slices.SortFunc(v.members, func(a, b member) int {
		if (a.Name == "") != (b.Name == "") {
			return strings.Compare(b.Name, a.Name) // the unnamed last
		}
		return strings.Compare(a.Name+"/"+a.ID, b.Name+"/"+b.ID)
	})
	return v, nil
}

// localStatus is the local member's status: its ID, the leader it knows,
// its database size.
func (m *Members) localStatus(ctx context.Context) (*clientv3.StatusResponse, error) {
	if m.LocalRemoved != nil && m.LocalRemoved() {
		return nil, fmt.Errorf("the local etcd member %s was removed from its cluster", m.self)
	}
	// A client in the member's process (embeddedetcd.Server.Client) has
	// no endpoint: it asks its member, whatever the endpoint.
	endpoint := ""
	if endpoints := m.etcd.Endpoints(); len(endpoints) > 0 {
		endpoint = endpoints[0]
	}
	status, err := m.etcd.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("reading the status of the local etcd member: %w", err)
	}
	return status, nil
}

// Remove removes member name (or, for a member not started yet, its hex ID).
// Unless force, it refuses (error naming the member, the counts, and
// "--force") a removal that would leave the remaining voters without a
// quorum of healthy voters; it never removes the last voter. When the target
// is the leader and the local member is the leader, it first moves
// leadership (clientv3 MoveLeader) to a healthy voter, so that the cluster
// does not wait for an election. When the target is the leader and the local
// member is not, it returns a *NotLeaderError (ErrNotLeader) that names the
// leader's API server, where the request should go.
func (m *Members) Remove(ctx context.Context, name string, force bool) error {
	logger := klog.FromContext(ctx)
	v, err := m.view(ctx)
	if err != nil {
		return err
	}
	target, err := v.find(name)
	if err != nil {
		return err
	}
	if err := checkQuorum(v.statuses(), target.MemberStatus); err != nil {
		if !force || errors.Is(err, errLastVoter) {
			return err
		}
		logger.Info("Removing an etcd member despite the quorum check (--force)", "member", displayName(target.MemberStatus), "reason", err)
	}
	if target.id == v.leader {
		if v.local != v.leader {
			return &NotLeaderError{Leader: displayName(target.MemberStatus), LeaderAPIServerURL: target.APIServerURL}
		}
		if err := m.moveLeader(ctx, v, target); err != nil {
			return err
		}
	}
	_, err = m.etcd.MemberRemove(ctx, target.id)
	if err != nil && target.id == v.local && errors.Is(err, rpctypes.ErrStopped) {
		// A member stops as it applies its own removal, and may do so
		// before it answers.
		err = nil
	}
	if err != nil {
		return removeError(target.MemberStatus, err)
	}
	logger.Info("Removed etcd member", "member", displayName(target.MemberStatus), "id", target.ID)
	if target.Name != "" {
		m.deleteReport(ctx, target.Name)
	}
	return nil
}

// moveLeader hands leadership from target, the local member, to a healthy
// voter. With none (only under --force) it leaves it: the removal then
// costs an election.
func (m *Members) moveLeader(ctx context.Context, v *view, target member) error {
	logger := klog.FromContext(ctx)
	for _, mb := range v.members {
		if mb.Learner || !mb.Healthy || mb.id == target.id {
			continue
		}
		if _, err := m.etcd.MoveLeader(ctx, mb.id); err != nil {
			return fmt.Errorf("moving etcd leadership from %s to %s before removing %s: %w", displayName(target.MemberStatus), displayName(mb.MemberStatus), displayName(target.MemberStatus), err)
		}
		logger.Info("Moved etcd leadership before removing the leader", "from", displayName(target.MemberStatus), "to", displayName(mb.MemberStatus))
		return nil
	}
	logger.Info("No healthy voter to move etcd leadership to; removing the leader, the others will elect a new one", "member", displayName(target.MemberStatus))
	return nil
}

// removeError explains etcd's refusals.
func removeError(target MemberStatus, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrMemberNotFound):
		return fmt.Errorf("member %s: %w (removed meanwhile?)", displayName(target), ErrMemberNotFound)
	case errors.Is(err, rpctypes.ErrUnhealthy), errors.Is(err, rpctypes.ErrMemberNotEnoughStarted):
		// etcd's --strict-reconfig-check, by its own count of peers
		// connected for at least 5s; --force does not reach it.
		return fmt.Errorf("etcd refused to remove member %s, by its own count of the voters connected to the local member for 5s or more (%v); "+
			"bring the stopped members back, or wait a few seconds after one reconnects, and try again: %w", displayName(target), err, ErrQuorum)
	default:
		return fmt.Errorf("removing etcd member %s: %w", displayName(target), err)
	}
}

// find returns the member called name, or whose hex ID it is.
func (v *view) find(name string) (member, error) {
	var names []string
	for _, mb := range v.members {
		if mb.Name == name && name != "" || mb.ID == name {
			return mb, nil
		}
		names = append(names, displayName(mb.MemberStatus))
	}
	return member{}, fmt.Errorf("member %q: %w; write one of the members' names (%s); `cluster members` lists them", name, ErrMemberNotFound, strings.Join(names, ", "))
}

func (v *view) statuses() []MemberStatus {
	out := make([]MemberStatus, 0, len(v.members))
	for _, mb := range v.members {
		out = append(out, mb.MemberStatus)
	}
	return out
}

// deleteReport deletes the status report of a removed member; failing
// that, it only lingers in List's input, which ignores reports of
// non-members.
func (m *Members) deleteReport(ctx context.Context, name string) {
	err := m.kube.CoordinationV1().Leases(leaseNamespace).Delete(ctx, LeaseName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Could not delete the status report of a removed etcd member", "member", name, "err", err)
	}
}
