package datadir

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/klog/v2"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

const (
	// DefaultSnapshotSchedule is k3s's default: at minute 0 of every
	// twelfth hour, in the machine's time zone.
	DefaultSnapshotSchedule = "0 */12 * * *"
	// DefaultSnapshotRetention is k3s's default: with the default schedule,
	// two and a half days of snapshots.
	DefaultSnapshotRetention = 5

	// snapshotsDirName is the scheduled snapshots' directory in the data dir.
	snapshotsDirName = "snapshots"
	// fileTimeFormat dates scheduled snapshots and the member data a
	// restore replaced: sortable, UTC, and without colons, which some file
	// systems and tools refuse.
	fileTimeFormat = "20060102T150405Z"
)

// NewSnapshotter returns what takes the scheduled snapshots of the member
// serving at endpoint into the snapshots directory of dataDir: at each time
// of schedule (cron syntax), keeping the newest retention of them.
func NewSnapshotter(dataDir, endpoint, schedule string, retention int) (*Snapshotter, error) {
	parsed, err := ParseSnapshotSchedule(schedule)
	if err != nil {
		return nil, err
	}
	return &Snapshotter{
		source:    embeddedetcd.SnapshotSource{Endpoint: endpoint},
		dir:       SnapshotsDir(dataDir),
		schedule:  parsed,
		retention: retention,
	}, nil
}

// scheduledName matches the names of scheduled snapshots, and nothing
// else: retention deletes only files whose name it matches.
var scheduledName = regexp.MustCompile(`^scheduled-(\d{8}T\d{6}Z)-(\d+)\.db$`)

// SnapshotsDir is where the control plane on dataDir keeps its scheduled
// snapshots.
func SnapshotsDir(dataDir string) string {
	return filepath.Join(dataDir, snapshotsDirName)
}

// scheduledSnapshotName names the snapshot taken at t of revision rev.
func scheduledSnapshotName(t time.Time, rev int64) string {
	return fmt.Sprintf("scheduled-%s-%d.db", t.UTC().Format(fileTimeFormat), rev)
}

// parseScheduledSnapshotName returns when the scheduled snapshot named name
// was taken and its revision; ok is false for any other name.
func parseScheduledSnapshotName(name string) (taken time.Time, rev int64, ok bool) {
	m := scheduledName.FindStringSubmatch(name)
	if m == nil {
		return time.Time{}, 0, false
	}
	taken, err := time.Parse(fileTimeFormat, m[1])
	if err != nil {
		return time.Time{}, 0, false
	}
	rev, err = strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return time.Time{}, 0, false
	}
	return taken, rev, true
}

// ParseSnapshotSchedule parses --embedded-etcd-snapshot-schedule.
func ParseSnapshotSchedule(spec string) (cron.Schedule, error) {
	schedule, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("--embedded-etcd-snapshot-schedule %q: %v; write a cron schedule such as %q (every 12 hours) or \"@every 6h\", or \"\" to take no scheduled snapshots", spec, err, DefaultSnapshotSchedule)
	}
	return schedule, nil
}

// Snapshotter takes snapshots of the embedded etcd member on a schedule
// into the data dir's snapshots directory, and keeps the newest of them.
type Snapshotter struct {
	source    embeddedetcd.SnapshotSource
	dir       string
	schedule  cron.Schedule
	retention int
}

// Run takes a snapshot at each time of the schedule until ctx is done. A
// snapshot that fails is logged, and the next one is taken on schedule: a
// full disk must not stop the control plane.
func (s *Snapshotter) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		now := time.Now()
		timer := time.NewTimer(s.schedule.Next(now).Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if err := s.snapshot(ctx); err != nil {
			if ctx.Err() != nil {
				return // stopped in the middle of it; nothing was left behind
			}
			logger.Error(err, "Scheduled etcd snapshot failed; the control plane carries on and tries again at the next scheduled time", "dir", s.dir)
		}
	}
}

// snapshot takes one scheduled snapshot, then deletes the oldest ones
// beyond the retention.
func (s *Snapshotter) snapshot(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// Snapshots hold every Secret: the directory is its owner's only.
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", s.dir, err)
	}
	taken := time.Now()
	path, status, err := embeddedetcd.SaveSnapshot(ctx, s.source, s.dir, func(st embeddedetcd.SnapshotStatus) string {
		return scheduledSnapshotName(taken, st.Revision)
	})
	if err != nil {
		return err
	}
	logger.V(1).Info("Took a scheduled etcd snapshot", "path", path, "revision", status.Revision, "keys", status.Keys, "size", status.Size, "duration", time.Since(taken))
	return pruneScheduledSnapshots(logger, s.dir, s.retention)
}

// pruneScheduledSnapshots deletes the oldest scheduled snapshots in dir
// beyond the newest keep. Only files named as scheduled snapshots are
// deleted: a snapshot saved there by hand, or any other file, stays.
func pruneScheduledSnapshots(logger klog.Logger, dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing scheduled snapshots: %w", err)
	}
	type scheduled struct {
		name  string
		taken time.Time
		rev   int64
	}
	var found []scheduled
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if taken, rev, ok := parseScheduledSnapshotName(e.Name()); ok {
			found = append(found, scheduled{e.Name(), taken, rev})
		}
	}
	if len(found) <= keep {
		return nil
	}
	slices.SortFunc(found, func(a, b scheduled) int {
		return cmp.Or(a.taken.Compare(b.taken), cmp.Compare(a.rev, b.rev))
	})
	var errs []error
	for _, old := range found[:len(found)-keep] {
		path := filepath.Join(dir, old.name)
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		logger.V(1).Info("Removed a scheduled etcd snapshot beyond the retention", "path", path, "retention", keep)
	}
	return errors.Join(errs...)
}

// Snapshot is a snapshot file in a data dir's snapshots directory.
type Snapshot struct {
	// Name is the file's name, Path its path.
	Name, Path string
	// Time is when it was taken: for a scheduled snapshot the time in its
	// name, for another the file's modification time.
	Time time.Time
	// Scheduled is whether the control plane took it on its schedule
	// (and retention may delete it).
	Scheduled bool
	// Size is the file's size in bytes.
	Size int64
	// Status is what the snapshot holds; valid when Err is nil.
	Status embeddedetcd.SnapshotStatus
	// Err says why the snapshot does not verify: its hash does not match
	// or its database cannot be read.
	Err error
}

// ListSnapshots returns the snapshots (*.db files) in the snapshots
// directory of dataDir, oldest first, each verified: it reads every file in
// full. It needs no running control plane.
func ListSnapshots(dataDir string) ([]Snapshot, error) {
	dir := SnapshotsDir(dataDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing snapshots: %w", err)
	}
	var snapshots []Snapshot
	for _, e := range entries {
		// Hidden files are snapshots being written.
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || filepath.Ext(e.Name()) != ".db" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since it was listed
		}
		s := Snapshot{Name: e.Name(), Path: filepath.Join(dir, e.Name()), Time: info.ModTime(), Size: info.Size()}
		if taken, _, ok := parseScheduledSnapshotName(e.Name()); ok {
			s.Time, s.Scheduled = taken, true
		}
		s.Status, s.Err = embeddedetcd.VerifySnapshot(s.Path)
		snapshots = append(snapshots, s)
	}
	slices.SortFunc(snapshots, func(a, b Snapshot) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.Name, b.Name))
	})
	return snapshots, nil
}

// EmbeddedEtcdEndpoint is the client URL of the embedded etcd member of the
// control plane that runs on dataDir. It fails, saying what to do, when
// none runs there.
func EmbeddedEtcdEndpoint(dataDir string) (string, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("--data-dir %q: %w", dataDir, err)
	}
	if err := checkOurs(dataDir); err != nil {
		return "", err
	}
	socket := filepath.Join(dataDir, etcdSocketRelPath)
	if len(socket) > maxUnixSocketPath {
		// See etcdSocketPath: the member's socket is then in a private
		// temporary directory that only the control plane knows.
		return "", fmt.Errorf("--data-dir %s is too long for the embedded etcd's unix socket, so the control plane keeps it where no other process finds it: rely on its scheduled snapshots (--embedded-etcd-snapshot-schedule), or choose a data dir path of at most %d bytes", dataDir, maxUnixSocketPath-len("/run/etcd.sock"))
	}
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return "", fmt.Errorf("no control plane with an embedded etcd runs on data dir %s (nothing listens on %s): start it, or, for a control plane that uses an external etcd, pass --etcd-servers (with --etcd-cafile, --etcd-certfile and --etcd-keyfile)", dataDir, socket)
	}
	if err != nil {
		return "", fmt.Errorf("connecting to the embedded etcd of data dir %s: %w", dataDir, err)
	}
	conn.Close() //nolint:errcheck // only a probe
	return "unix://" + socket, nil
}

// checkOurs fails, saying what to check, unless dataDir is the data dir of
// a control plane with an embedded etcd member: one that holds the pki/
// and etcd/ its first start created.
func checkOurs(dataDir string) error {
	info, err := os.Stat(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s does not exist: check --data-dir", dataDir)
	}
	if err != nil {
		return fmt.Errorf("--data-dir: %w", unwrapPathError(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("--data-dir %s is not a directory", dataDir)
	}
	hasPKI, err := exists(filepath.Join(dataDir, pkiDirName))
	if err != nil {
		return err
	}
	hasEtcd, err := exists(filepath.Join(dataDir, etcdDirName))
	if err != nil {
		return err
	}
	switch {
	case !hasPKI && !hasEtcd:
		return fmt.Errorf("%s is not the data dir of a control plane: it holds no pki/ and no etcd/, which the control plane creates at its first start; check --data-dir", dataDir)
	case !hasEtcd:
		return fmt.Errorf("the control plane of data dir %s has no embedded etcd member (no etcd/ in it): it uses an external etcd; pass --etcd-servers (with --etcd-cafile, --etcd-certfile and --etcd-keyfile)", dataDir)
	}
	return nil
}
