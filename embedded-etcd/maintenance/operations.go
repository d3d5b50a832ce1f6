package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dustin/go-humanize"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey is the key in which the API servers' compactors agree on
// the revision compacted to (k8s.io/apiserver/pkg/storage/etcd3/compact.go);
// their watch caches follow it.
const compactRevKey = "compact_rev_key"

// Compact compacts the cluster's history up to its current revision, as
// the API servers' compactors do every few minutes (up to the revision of
// their previous round), and returns that revision. It waits until the
// member has freed the pages of what the compaction removed, so that the
// in-use size it reports next, and a defragmentation, count them.
//
// As the compactors do, it first records the revision in compactRevKey
// (compare-and-swap on its version): the API servers' watch caches learn
// of the compaction, and their compactors' next round takes it over rather
// than compact to an older revision and fail. While a NOSPACE alarm is
// raised that write is refused; the compaction goes ahead without it.
func Compact(ctx context.Context, c *clientv3.Client) (int64, error) {
	rev, version, err := readCompactRev(ctx, c)
	if err != nil {
		return 0, err
	}
	if err := casCompactRev(ctx, c, version, rev); err != nil && !errors.Is(err, rpctypes.ErrNoSpace) {
		return 0, err
	}
	return rev, compactTo(ctx, c, rev)
}

// recordCompaction records rev in compactRevKey.
func recordCompaction(ctx context.Context, c *clientv3.Client, rev int64) error {
	_, version, err := readCompactRev(ctx, c)
	if err != nil {
		return err
	}
	return casCompactRev(ctx, c, version, rev)
}

// readCompactRev returns the cluster's current revision and the version
// of compactRevKey.
func readCompactRev(ctx context.Context, c *clientv3.Client) (rev, version int64, err error) {
	resp, err := c.Get(ctx, compactRevKey)
	if err != nil {
		return 0, 0, fmt.Errorf("reading %s: %w", compactRevKey, err)
	}
	if len(resp.Kvs) > 0 {
		version = resp.Kvs[0].Version
	}
	return resp.Header.Revision, version, nil
}

// casCompactRev writes rev to compactRevKey unless its version moved from
// version: a compactor recorded its own round at this very moment, and
// compacting to rev still holds.
func casCompactRev(ctx context.Context, c *clientv3.Client, version, rev int64) error {
	_, err := c.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))).
		Commit()
	if err != nil {
		return fmt.Errorf("recording the compaction revision %d in %s: %w", rev, compactRevKey, err)
	}
	return nil
}

// compactWithoutRecord compacts to the current revision without recording
// it: for a cluster whose NOSPACE alarm is raised, which would refuse the
// record (and log that it did). Record it once the alarm is disarmed.
func compactWithoutRecord(ctx context.Context, c *clientv3.Client) (int64, error) {
	resp, err := c.Get(ctx, compactRevKey, clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("reading the current etcd revision: %w", err)
	}
	return resp.Header.Revision, compactTo(ctx, c, resp.Header.Revision)
}

// compactTo compacts to rev, physically; a revision compacted already is
// no error.
func compactTo(ctx context.Context, c *clientv3.Client, rev int64) error {
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("compacting etcd to revision %d: %w", rev, err)
	}
	return nil
}

// Defragment defragments the database of the member at endpoint: it gives
// the pages compaction freed back to the filesystem. The member answers no
// request meanwhile (seconds for a database of gigabytes), so defragment
// the members of a cluster one at a time.
func Defragment(ctx context.Context, c *clientv3.Client, endpoint string) error {
	if _, err := c.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragmenting etcd at %s: %w", endpoint, err)
	}
	return nil
}

// Disarm disarms alarms. A NOSPACE alarm disarmed while the member's
// database is still over its quota is raised again by the next write.
func Disarm(ctx context.Context, c *clientv3.Client, alarms []Alarm) error {
	for _, a := range alarms {
		t, ok := pb.AlarmType_value[a.Type]
		if !ok || t == int32(pb.AlarmType_NONE) {
			return fmt.Errorf("unknown etcd alarm %q", a.Type)
		}
		if _, err := c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(t)}); err != nil {
			return fmt.Errorf("disarming the %s alarm of etcd member %s: %w", a.Type, a.Member, err)
		}
	}
	return nil
}

// maxRequestBytes is etcd's default --max-request-bytes: a member whose
// database is within it of the quota raises NOSPACE at the next large write.
const maxRequestBytes = 3 << 19

// SafeToDisarm refuses to disarm a NOSPACE alarm while a member that st
// reached is still at its quota, less the largest write: the next write
// would raise the alarm again. Its error names the member and what to do.
func SafeToDisarm(st *Status) error {
	if len(st.AlarmsOf(NoSpace)) == 0 {
		return nil
	}
	for _, m := range st.Members {
		if m.Reached() && m.Quota > 0 && m.DBSize+maxRequestBytes >= m.Quota {
			return fmt.Errorf("member %s's database (%s) is still at its quota (%s, less the %s of the largest write): the next write would raise the NOSPACE alarm again. Delete what you no longer need, then run \"etcd compact\" and \"etcd defrag\", and disarm after",
				m.DisplayName(), humanize.IBytes(uint64(m.DBSize)), humanize.IBytes(uint64(m.Quota)), humanize.IBytes(maxRequestBytes))
		}
	}
	return nil
}
