// Package maintenance looks after an etcd cluster the way etcdctl's
// maintenance commands do: its status, compaction, defragmentation and
// alarms. The "etcd" commands use it on the embedded member (through its
// socket) or on an external cluster; the control plane uses it to watch the
// database's space and to recover its embedded member from a full
// database on its own (space.go), since nobody else can reach that member.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Status is the state of an etcd cluster as seen through a client's
// endpoints.
type Status struct {
	// Members are the cluster's members, in the order etcd lists them.
	Members []MemberStatus
	// LeaderID is the member that leads the cluster, as the first endpoint
	// that answered knows it; 0 when none did or it knows no leader.
	LeaderID uint64
	// Revision is the cluster's current revision, as the first endpoint
	// that answered knows it.
	Revision int64
	// Alarms are the cluster's active alarms.
	Alarms []Alarm
	// AlarmsErr is why the alarms are not known: an endpoint reported
	// one, and the cluster could not list them (e.g. it has no quorum).
	// Alarms is empty then.
	AlarmsErr error
}

// MemberStatus is one member of the cluster: what the cluster knows of it
// and, when one of the client's endpoints is this member, what it says of
// itself.
type MemberStatus struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	Learner    bool

	// Endpoint is the client's endpoint this member answered on; empty
	// when none of them is this member (e.g. the peers of an embedded
	// member, whose sockets are on other machines).
	Endpoint string
	// Err is why the endpoint did not answer, for an endpoint that did
	// not; Endpoint names it then and the fields below are zero.
	Err error

	// Version is the member's etcd version.
	Version string
	// DBSize is the size of the member's database file, DBSizeInUse the
	// part of it that holds data: compaction frees pages inside the file,
	// defragmentation gives them back to the filesystem.
	DBSize, DBSizeInUse int64
	// Quota is the database size at which the member raises its NOSPACE
	// alarm (its --quota-backend-bytes); 0 when it does not say.
	Quota int64
	// Revision is the revision the member has applied.
	Revision int64
}

// Reached reports whether the member answered on one of the endpoints.
func (m MemberStatus) Reached() bool { return m.Endpoint != "" && m.Err == nil }

// DisplayName is the member's name, or its ID when it has none yet (a
// member added to the cluster that has not started).
func (m MemberStatus) DisplayName() string {
	if m.Name != "" {
		return m.Name
	}
	return fmt.Sprintf("%x", m.ID)
}

// Alarm is an alarm raised by a member.
type Alarm struct {
	MemberID uint64
	// Member names the member, as Status.Members does.
	Member string
	// Type is e.g. "NOSPACE" or "CORRUPT".
	Type string
}

// NoSpace is the alarm a member raises when its database reaches its quota:
// the cluster refuses every write but deletions until it is disarmed.
const NoSpace = "NOSPACE"

// GetStatus asks each of the client's endpoints for its member's status
// and the members it knows of, and, when one of them reports an alarm, the
// cluster for its alarms. Each of these is answered by the member from
// what it holds, without a quorum (and by a learner), but the list of
// alarms: etcd agrees on it through its log, so it is asked for only when
// a member's status says there is one. It fails when no endpoint answers;
// an endpoint that does not answer is reported in its member's Err (or,
// when no member is known to answer there, in the error with the others).
func GetStatus(ctx context.Context, c *clientv3.Client) (*Status, error) {
	members, err := c.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members: %w", err)
	}
	st := &Status{}
	for _, m := range members.Members {
		st.Members = append(st.Members, MemberStatus{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, Learner: m.IsLearner})
	}
	var errs []error
	alarmed := false
	for _, endpoint := range c.Endpoints() {
		resp, err := c.Status(ctx, endpoint)
		if err != nil {
			if i := st.memberAt(endpoint); i >= 0 {
				st.Members[i].Endpoint, st.Members[i].Err = endpoint, err
				continue
			}
			errs = append(errs, fmt.Errorf("etcd at %s: %w", endpoint, err))
			continue
		}
		i := st.member(resp.Header.MemberId)
		if i < 0 {
			// Removed between the two calls: say so rather than drop it.
			errs = append(errs, fmt.Errorf("etcd at %s answers as member %x, which the cluster does not list", endpoint, resp.Header.MemberId))
			continue
		}
		m := &st.Members[i]
		m.Endpoint, m.Err = endpoint, nil
		m.Version, m.DBSize, m.DBSizeInUse, m.Quota, m.Revision = resp.Version, resp.DbSize, resp.DbSizeInUse, resp.DbSizeQuota, resp.Header.Revision
		if st.Revision == 0 {
			st.LeaderID, st.Revision = resp.Leader, resp.Header.Revision
		}
		// Each active alarm is an entry "memberID:… alarm:…" of the
		// member's own (the cluster's alarms, as it applied them).
		for _, e := range resp.Errors {
			alarmed = alarmed || strings.Contains(e, "alarm:")
		}
	}
	if !slices.ContainsFunc(st.Members, MemberStatus.Reached) {
		return nil, utilerrors.NewAggregate(append(errs, errors.New("no etcd endpoint answered")))
	}
	if alarmed {
		alarms, err := c.AlarmList(ctx)
		if err != nil {
			st.AlarmsErr = fmt.Errorf("listing the etcd alarms: %w", err)
			errs = append(errs, st.AlarmsErr)
		} else {
			for _, a := range alarms.Alarms {
				alarm := Alarm{MemberID: a.MemberID, Member: fmt.Sprintf("%x", a.MemberID), Type: a.Alarm.String()}
				if i := st.member(a.MemberID); i >= 0 {
					alarm.Member = st.Members[i].DisplayName()
				}
				st.Alarms = append(st.Alarms, alarm)
			}
		}
	}
	return st, utilerrors.NewAggregate(errs)
}

// member is the index of the member with that ID, or -1.
func (s *Status) member(id uint64) int {
	return slices.IndexFunc(s.Members, func(m MemberStatus) bool { return m.ID == id })
}

// memberAt is the index of the member that lists endpoint among its client
// URLs, or -1.
func (s *Status) memberAt(endpoint string) int {
	return slices.IndexFunc(s.Members, func(m MemberStatus) bool { return slices.Contains(m.ClientURLs, endpoint) })
}

// Leader is the leading member, or nil.
func (s *Status) Leader() *MemberStatus {
	if i := s.member(s.LeaderID); i >= 0 {
		return &s.Members[i]
	}
	return nil
}

// AlarmsOf are the alarms of one type.
func (s *Status) AlarmsOf(alarmType string) []Alarm {
	var alarms []Alarm
	for _, a := range s.Alarms {
		if a.Type == alarmType {
			alarms = append(alarms, a)
		}
	}
	return alarms
}

// withoutAlarms is a copy of the status without those alarms.
func (s *Status) withoutAlarms(alarms []Alarm) *Status {
	c := *s
	c.Alarms = slices.DeleteFunc(slices.Clone(s.Alarms), func(a Alarm) bool { return slices.Contains(alarms, a) })
	return &c
}
