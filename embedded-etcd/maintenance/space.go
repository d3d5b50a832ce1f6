package maintenance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
)

const (
	// DefaultSpaceInterval is how often the space monitor asks etcd for its
	// database size and alarms: a status call each member answers from
	// memory (GetStatus).
	DefaultSpaceInterval = 5 * time.Second

	// RecoverBelow is the part of the quota under which the monitor gives
	// a full embedded member back its writes: once the data in use is
	// under 80% of the quota, it defragments and disarms. Disarming as
	// soon as the database is a page under the quota would refuse writes
	// again a few writes later, and each round costs a defragmentation,
	// during which the member answers nothing; a fifth of the quota is
	// room for the writes of a while (and, with the default 8 GiB quota,
	// 1.6 GiB), without asking a user who deleted what they could to
	// delete much more.
	RecoverBelow = 0.8

	// statusTimeout bounds the status requests of a check.
	statusTimeout = 10 * time.Second
	// maintenanceTimeout bounds a compaction and a defragmentation, which
	// take a while for a database of gigabytes (and block the start of a
	// server on a full one: it cannot write before).
	maintenanceTimeout = 10 * time.Minute
	// reminderInterval is how often the log repeats that the alarm is
	// still raised.
	reminderInterval = 10 * time.Minute
)

// SpaceConfig configures a SpaceMonitor.
type SpaceConfig struct {
	// Client reaches the members whose space to watch: the embedded
	// member's socket, or the endpoints of an external cluster.
	Client clientv3.Config
	// Recover lets the monitor compact, defragment and disarm a NOSPACE
	// alarm of the member at the (one) endpoint: the embedded member, which
	// no user can reach to do it. Members of an external cluster are their
	// operators' to defragment: the monitor only reports them.
	Recover bool
	// QuotaFlag names the setting that raises the quota, for the messages
	// (e.g. "--embedded-etcd-quota-bytes").
	QuotaFlag string
	// Interval between checks; DefaultSpaceInterval when zero.
	Interval time.Duration
}

// SpaceMonitor watches the space of etcd's database: it exports the size
// of each member's database beside its quota as metrics, fails a readiness
// check while a NOSPACE alarm is raised, says so once in the log (and then
// only every reminderInterval), and, with SpaceConfig.Recover, recovers
// the member once deletions have made room.
//
// A NOSPACE alarm stays raised until someone disarms it, however much is
// deleted, and the API servers' own compaction of the history is a write
// that the alarm refuses: without the monitor, a full embedded member
// refuses writes for good, even across restarts with a larger quota.
type SpaceMonitor struct {
	cfg SpaceConfig
	now func() time.Time

	// client is set by Open and closed when Run returns.
	client *clientv3.Client

	mu sync.Mutex
	// status is what the last check saw; nil before the first.
	status *Status
	// raisedSince is when a check first saw a NOSPACE alarm; zero while
	// none is raised. checks counts the checks that saw it since.
	raisedSince time.Time
	checks      int
	reminded    time.Time
	// The recovery's state, touched by Check alone (which runs one at a
	// time): the revision the monitor compacted to last, and the in-use
	// size after its last defragmentation (another one gives nothing
	// back until deletions lowered it).
	compacted      int64
	defraggedInUse int64
	// series are the gauges' label values the monitor set last.
	series *spaceSeries
}

// NewSpaceMonitor returns a monitor that does nothing until Open.
func NewSpaceMonitor(cfg SpaceConfig) *SpaceMonitor {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSpaceInterval
	}
	return &SpaceMonitor{cfg: cfg, now: time.Now, defraggedInUse: math.MaxInt64}
}

// Open connects to etcd. With Recover it checks once before it returns,
// so that a control plane that starts on a full database makes room
// before its first write. Run the monitor after Open, or Close it.
func (m *SpaceMonitor) Open(ctx context.Context) error {
	client, err := clientv3.New(m.cfg.Client)
	if err != nil {
		return fmt.Errorf("connecting to etcd to watch its database space: %w", err)
	}
	m.client = client
	if m.cfg.Recover {
		m.Check(ctx)
	}
	return nil
}

// Run checks every interval until ctx is done, then closes the client.
func (m *SpaceMonitor) Run(ctx context.Context) {
	defer m.Close()
	wait.UntilWithContext(ctx, m.Check, m.cfg.Interval)
}

// Close closes the client Open made.
func (m *SpaceMonitor) Close() {
	if m.client != nil {
		m.client.Close() //nolint:errcheck // nothing to flush
	}
}

// Check asks etcd for its status once: it updates the metrics and the
// readiness check, logs what changed, and recovers the member when it can.
// Checks run one at a time (Open, then Run).
func (m *SpaceMonitor) Check(ctx context.Context) {
	logger := klog.FromContext(ctx)
	st, err := m.getStatus(ctx)
	if st == nil {
		// etcd's own health checks report an etcd that does not answer.
		logger.V(2).Info("Cannot check the etcd database's space", "err", err)
		return
	}
	var recovered *recovery
	if m.cfg.Recover && len(st.AlarmsOf(NoSpace)) > 0 {
		recovered, err = m.recover(ctx, st)
		if err != nil {
			logger.Error(err, "Cannot recover etcd from a full database yet; the next check tries again")
		}
		if recovered != nil {
			if after, _ := m.getStatus(ctx); after != nil {
				st = after
			} else {
				st = st.withoutAlarms(recovered.disarmed)
			}
		}
	}
	m.series = setSpaceMetrics(m.series, st)
	m.record(logger, st, recovered)
}

// getStatus is GetStatus within statusTimeout. While the alarms cannot be
// listed, it keeps those of the previous check.
func (m *SpaceMonitor) getStatus(ctx context.Context) (*Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st, err := GetStatus(ctx, m.client)
	if st != nil && st.AlarmsErr != nil {
		m.mu.Lock()
		if m.status != nil {
			st.Alarms = m.status.Alarms
		}
		m.mu.Unlock()
	}
	return st, err
}

// recovery is what the monitor did to give a full member its writes back.
type recovery struct {
	member             string
	revision           int64
	sizeBefore, sizeAt int64
	quota              int64
	defragmented       bool
	disarmed           []Alarm
}

// recover makes room in the member at the one endpoint while a NOSPACE
// alarm is raised: it compacts the history, and once the data in use is
// under RecoverBelow of the quota, defragments the member when its file is
// over that too, and disarms the member's alarm (and those of members the
// cluster no longer has, which nobody else would). It returns nil, nil
// while there is not yet room, or when the alarm is another member's.
//
// Its member is defragmented while another member's alarm is raised too:
// etcd raises one NOSPACE alarm at a time, and a member over its quota
// would raise the next as soon as the other server disarmed its own.
func (m *SpaceMonitor) recover(ctx context.Context, st *Status) (*recovery, error) {
	own := m.ownMember(st)
	if own == nil {
		return nil, errors.New("the embedded etcd member did not report its status")
	}
	var alarms []Alarm
	for _, a := range st.AlarmsOf(NoSpace) {
		if a.MemberID == own.ID || st.member(a.MemberID) < 0 {
			alarms = append(alarms, a)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, maintenanceTimeout)
	defer cancel()
	name := own.DisplayName()
	if st.Revision > m.compacted {
		rev, err := compactWithoutRecord(ctx, m.client)
		if err != nil {
			return nil, err
		}
		m.compacted = rev
		// The pages the compaction freed may not all count yet; the
		// next check sees the rest.
		if own, err = m.memberStatus(ctx, own.Endpoint); err != nil {
			return nil, err
		}
	}
	limit := recoverLimit(own.Quota)
	if own.DBSizeInUse > limit {
		return nil, nil
	}
	r := &recovery{member: name, revision: m.compacted, sizeBefore: own.DBSize, sizeAt: own.DBSize, quota: own.Quota}
	if own.DBSize > limit {
		if own.DBSizeInUse >= m.defraggedInUse {
			// Defragmented already, and nothing deleted since.
			return nil, nil
		}
		if err := Defragment(ctx, m.client, own.Endpoint); err != nil {
			return nil, err
		}
		after, err := m.memberStatus(ctx, own.Endpoint)
		if err != nil {
			return nil, err
		}
		r.sizeAt, r.defragmented, m.defraggedInUse = after.DBSize, true, after.DBSizeInUse
		if after.DBSize > limit {
			// The in-use size undercounts what a defragmented file
			// needs; wait for more deletions.
			return nil, nil
		}
	}
	if len(alarms) == 0 {
		// Room in this member; the alarm is another's, whose server
		// recovers it.
		return nil, nil
	}
	if err := Disarm(ctx, m.client, alarms); err != nil {
		return nil, err
	}
	r.disarmed, m.defraggedInUse = alarms, math.MaxInt64
	// Now that writes are accepted: the API servers' compactors take the
	// compaction over, rather than compact to an older revision and fail.
	if err := recordCompaction(ctx, m.client, m.compacted); err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot record the compaction for the API servers' compactors", "err", err)
	}
	return r, nil
}

// ownMember is the member at the monitor's one endpoint.
func (m *SpaceMonitor) ownMember(st *Status) *MemberStatus {
	for i := range st.Members {
		if st.Members[i].Reached() {
			return &st.Members[i]
		}
	}
	return nil
}

// memberStatus asks the member at endpoint for its status alone.
func (m *SpaceMonitor) memberStatus(ctx context.Context, endpoint string) (*MemberStatus, error) {
	resp, err := m.client.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("asking etcd at %s for its status: %w", endpoint, err)
	}
	return &MemberStatus{ID: resp.Header.MemberId, Endpoint: endpoint, DBSize: resp.DbSize, DBSizeInUse: resp.DbSizeInUse, Quota: resp.DbSizeQuota, Revision: resp.Header.Revision}, nil
}

// recoverLimit is the database size under which a member with that quota
// gets its writes back.
func recoverLimit(quota int64) int64 { return int64(float64(quota) * RecoverBelow) }

// record keeps what a check saw for the readiness check and logs a NOSPACE
// alarm once when it is raised, every reminderInterval while it stays, and
// once when it goes.
func (m *SpaceMonitor) record(logger klog.Logger, st *Status, recovered *recovery) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = st
	now := m.now()
	raised := st.AlarmsOf(NoSpace)
	switch {
	case len(raised) > 0 && m.raisedSince.IsZero():
		m.raisedSince, m.reminded, m.checks = now, now, 1
		logger.Error(nil, "etcd's database is full: "+m.advice(st), spaceFields(st, raised)...)
	case len(raised) > 0:
		m.checks++
		if now.Sub(m.reminded) >= reminderInterval {
			m.reminded = now
			logger.Error(nil, "etcd's database is still full: "+m.advice(st), append(spaceFields(st, raised), "raisedFor", now.Sub(m.raisedSince).Round(time.Second), "checks", m.checks)...)
		}
	case recovered != nil:
		// Refused and given back between two checks, or after several.
		var raisedFor time.Duration
		if !m.raisedSince.IsZero() {
			raisedFor = now.Sub(m.raisedSince).Round(time.Second)
		}
		m.raisedSince, m.checks = time.Time{}, 0
		logger.Info("etcd's database had reached its quota and has room again: the control plane compacted its history (and defragmented it, when its file was over the limit) and disarmed its NOSPACE alarm; writes are accepted again",
			"member", recovered.member, "compactedTo", recovered.revision, "defragmented", recovered.defragmented,
			"sizeBefore", recovered.sizeBefore, "sizeAfter", recovered.sizeAt, "quota", recovered.quota, "raisedFor", raisedFor)
	case !m.raisedSince.IsZero():
		raisedFor := now.Sub(m.raisedSince).Round(time.Second)
		m.raisedSince, m.checks = time.Time{}, 0
		logger.Info("etcd's NOSPACE alarm was disarmed; writes are accepted again", "raisedFor", raisedFor)
	}
}

// advice says what the alarm does and what to do about it.
func (m *SpaceMonitor) advice(st *Status) string {
	var b strings.Builder
	b.WriteString("its NOSPACE alarm is raised (")
	for i, a := range st.AlarmsOf(NoSpace) {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("member " + a.Member)
		if i := st.member(a.MemberID); i >= 0 && st.Members[i].Reached() {
			mem := st.Members[i]
			fmt.Fprintf(&b, ": database %s, %s in use, quota %s", humanize.IBytes(uint64(mem.DBSize)), humanize.IBytes(uint64(mem.DBSizeInUse)), humanize.IBytes(uint64(mem.Quota)))
		}
	}
	b.WriteString("), so etcd refuses every write but deletions; reads are still served. ")
	if m.cfg.Recover && !m.ownAlarm(st) {
		b.WriteString("Delete objects you no longer need: the server of the member whose alarm it is compacts, defragments and disarms it once the data in use is under 80% of the quota (\"sample-generic-controlplane etcd status\" on that server shows it; \"etcd alarm disarm\" there disarms it by hand).")
		return b.String()
	}
	if m.cfg.Recover {
		fmt.Fprintf(&b, "Delete objects you no longer need: once the data in use is under %d%% of the quota, the control plane compacts, defragments and disarms the alarm itself. Or stop the control plane and start it with a larger %s.", int(RecoverBelow*100), m.cfg.QuotaFlag)
		return b.String()
	}
	fmt.Fprintf(&b, "Delete objects you no longer need, then compact, defragment and disarm (\"sample-generic-controlplane etcd compact\", \"etcd defrag\" and \"etcd alarm disarm\" with --etcd-servers, or etcdctl); or raise the members' %s.", m.cfg.QuotaFlag)
	return b.String()
}

// ownAlarm reports whether a NOSPACE alarm raised is the monitor's own
// member's, or of a member the cluster no longer has (which the monitor
// disarms too).
func (m *SpaceMonitor) ownAlarm(st *Status) bool {
	own := m.ownMember(st)
	return slices.ContainsFunc(st.AlarmsOf(NoSpace), func(a Alarm) bool {
		return own == nil || a.MemberID == own.ID || st.member(a.MemberID) < 0
	})
}

func spaceFields(st *Status, alarms []Alarm) []any {
	var members []string
	for _, a := range alarms {
		members = append(members, a.Member)
	}
	fields := []any{"members", members}
	if i := st.member(alarms[0].MemberID); i >= 0 && st.Members[i].Reached() {
		mem := st.Members[i]
		fields = append(fields, "size", mem.DBSize, "inUse", mem.DBSizeInUse, "quota", mem.Quota)
	}
	return fields
}

// ReadyzCheck fails while a NOSPACE alarm is raised, saying what to do.
func (m *SpaceMonitor) ReadyzCheck() healthz.HealthChecker {
	return healthz.NamedCheck("etcd-nospace-alarm", func(*http.Request) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.status == nil || len(m.status.AlarmsOf(NoSpace)) == 0 {
			return nil
		}
		return errors.New("etcd's database is full: " + m.advice(m.status))
	})
}
