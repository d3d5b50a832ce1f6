package cluster

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MembersPath is where Handler serves: GET lists the members, DELETE
// MembersPath/NAME removes one. It is a non-resource URL, so upstream's
// authorization decides who may (verbs get and delete; admins only).
const MembersPath = "/cluster/v1/members"

// MemberStatus is one member as `cluster members` shows it (JSON over the API).
type MemberStatus struct {
	// Name is the member's name, e.g. "host-1a2b3c4d"; empty for a member
	// that was added but has not started yet (etcd learns a name when the
	// member first connects).
	Name string `json:"name"`
	// ID is etcd's member ID in hex, as etcdctl writes it.
	ID       string   `json:"id"`
	PeerURLs []string `json:"peerURLs,omitempty"`
	// Learner is a member that receives the log but does not vote.
	Learner bool `json:"learner,omitempty"`
	Leader  bool `json:"leader,omitempty"`
	// Healthy is a member whose status report (its Lease) was renewed within
	// the Lease's duration.
	Healthy bool `json:"healthy"`
	// DBSize is the size of the member's database file in bytes; 0 when
	// unknown.
	DBSize int64 `json:"dbSize,omitempty"`
	// APIServerURL is where the API server of the member's control plane
	// serves, as it reports it.
	APIServerURL string `json:"apiServerURL,omitempty"`
	// LastReport is when the member last reported its status.
	LastReport *metav1.Time `json:"lastReport,omitempty"`
	// Message says why the member is not healthy, e.g. "no status report
	// for 45s".
	Message string `json:"message,omitempty"`
}

// Role is "learner" or "voter".
func (s MemberStatus) Role() string {
	if s.Learner {
		return "learner"
	}
	return "voter"
}

var (
	// ErrMemberNotFound is returned (wrapped) for a name that is no member's.
	ErrMemberNotFound = errors.New("no such member")
	// ErrQuorum is returned (wrapped) for a removal refused because the
	// remaining voters would have no quorum of healthy voters, or because
	// the member is the last voter.
	ErrQuorum = errors.New("removal would lose the quorum")
	// ErrNotLeader is returned (wrapped in a *NotLeaderError) when the
	// member to remove is the leader and the local member is not: only the
	// leader can hand leadership over before it goes, so the request must be
	// sent to the leader's API server.
	ErrNotLeader = errors.New("the local etcd member is not the leader")
)

// NotLeaderError says where to send a removal of the leader.
type NotLeaderError struct {
	// Leader is the leader's member name.
	Leader string
	// LeaderAPIServerURL is the API server of the leader's control plane;
	// empty when the leader has not reported one.
	LeaderAPIServerURL string
}

func (e *NotLeaderError) Error() string {
	where := "its API server has not reported its URL; send the request to the API server of " + e.Leader
	if e.LeaderAPIServerURL != "" {
		where = "send the request to its API server, " + e.LeaderAPIServerURL
	}
	return fmt.Sprintf("member %s is the etcd leader and the local member is not: only the leader hands leadership over before it is removed; %s", e.Leader, where)
}

// Unwrap makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// The answer of Handler to a removal of the leader sent to another member's
// API server: HTTP 421 (Misdirected Request), a metav1.Status with this
// reason and, in its details, a cause of type CauseTypeLeaderAPIServerURL
// whose message is the URL to send the request to.
const (
	StatusReasonNotLeader       metav1.StatusReason = "NotLeader"
	CauseTypeLeaderAPIServerURL metav1.CauseType    = "LeaderAPIServerURL"
)
