package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/klog/v2"
)

const (
	// DefaultSchedule is k3s's default: at minute 0 of every
	// twelfth hour, in the machine's time zone.
	DefaultSchedule = "0 */12 * * *"
	// DefaultRetention is k3s's default: with the default schedule,
	// two and a half days of snapshots.
	DefaultRetention = 5

	// snapshotsDirName is the scheduled snapshots' directory in the data dir.
	snapshotsDirName = "snapshots"
	// FileTimeFormat dates scheduled snapshots and the member data a
	// restore replaced: sortable, UTC, and without colons, which some file
	// systems and tools refuse.
	FileTimeFormat = "20060102T150405Z"
)

// NewScheduler returns what takes the scheduled snapshots of the member
// serving at endpoint into the snapshots directory of dataDir: at each time
// of schedule (cron syntax), keeping the newest retention of them.
func NewScheduler(dataDir, endpoint, schedule string, retention int) (*Scheduler, error) {
	parsed, err := ParseSchedule(schedule)
	if err != nil {
		return nil, err
	}
	return &Scheduler{
		source:    Source{Endpoint: endpoint},
		dir:       ScheduledDir(dataDir),
		schedule:  parsed,
		retention: retention,
	}, nil
}

// scheduledName matches the names of scheduled snapshots, and nothing
// else: retention deletes only files whose name it matches.
var scheduledName = regexp.MustCompile(`^scheduled-(\d{8}T\d{6}Z)-(\d+)\.db$`)

// ScheduledDir is where the control plane on dataDir keeps its scheduled
// snapshots.
func ScheduledDir(dataDir string) string {
	return filepath.Join(dataDir, snapshotsDirName)
}

// scheduledSnapshotName names the snapshot taken at t of revision rev.
func scheduledSnapshotName(t time.Time, rev int64) string {
	return fmt.Sprintf("scheduled-%s-%d.db", t.UTC().Format(FileTimeFormat), rev)
}

// parseScheduledSnapshotName returns when the scheduled snapshot named name
// was taken and its revision; ok is false for any other name.
func parseScheduledSnapshotName(name string) (taken time.Time, rev int64, ok bool) {
	m := scheduledName.FindStringSubmatch(name)
	if m == nil {
		return time.Time{}, 0, false
	}
	taken, err := time.Parse(FileTimeFormat, m[1])
	if err != nil {
		return time.Time{}, 0, false
	}
	rev, err = strconv.ParseInt(m[2], 10, 64)
	if err != nil {
		return time.Time{}, 0, false
	}
	return taken, rev, true
}

// ParseSchedule parses --embedded-etcd-snapshot-schedule.
func ParseSchedule(spec string) (cron.Schedule, error) {
	schedule, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("--embedded-etcd-snapshot-schedule %q: %v; write a cron schedule such as %q (every 12 hours) or \"@every 6h\", or \"\" to take no scheduled snapshots", spec, err, DefaultSchedule)
	}
	return schedule, nil
}

// Scheduler takes snapshots of the embedded etcd member on a schedule
// into the data dir's snapshots directory, and keeps the newest of them.
type Scheduler struct {
	source    Source
	dir       string
	schedule  cron.Schedule
	retention int
}

// Run takes a snapshot at each time of the schedule until ctx is done. A
// snapshot that fails is logged, and the next one is taken on schedule: a
// full disk must not stop the control plane.
func (s *Scheduler) Run(ctx context.Context) {
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
func (s *Scheduler) snapshot(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// Snapshots hold every Secret: the directory is its owner's only.
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", s.dir, err)
	}
	taken := time.Now()
	path, status, err := Save(ctx, s.source, s.dir, func(st Status) string {
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

// File is a snapshot file in a data dir's snapshots directory.
type File struct {
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
	Status Status
	// Err says why the snapshot does not verify: its hash does not match
	// or its database cannot be read.
	Err error
}

// List returns the snapshots (*.db files) in the snapshots
// directory of dataDir, oldest first, each verified: it reads every file in
// full. It needs no running control plane.
func List(dataDir string) ([]File, error) {
	dir := ScheduledDir(dataDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing snapshots: %w", err)
	}
	var snapshots []File
	for _, e := range entries {
		// Hidden files are snapshots being written.
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || filepath.Ext(e.Name()) != ".db" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since it was listed
		}
		s := File{Name: e.Name(), Path: filepath.Join(dir, e.Name()), Time: info.ModTime(), Size: info.Size()}
		if taken, _, ok := parseScheduledSnapshotName(e.Name()); ok {
			s.Time, s.Scheduled = taken, true
		}
		s.Status, s.Err = Verify(s.Path)
		snapshots = append(snapshots, s)
	}
	slices.SortFunc(snapshots, func(a, b File) int {
		return cmp.Or(a.Time.Compare(b.Time), strings.Compare(a.Name, b.Name))
	})
	return snapshots, nil
}
