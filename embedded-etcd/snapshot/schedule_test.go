package snapshot

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
)

func TestScheduledSnapshotName(t *testing.T) {
	taken := time.Date(2026, 11, 23, 4, 18, 36, 999, time.FixedZone("CET", 3600))
	name := scheduledSnapshotName(taken, 1234)
	if want := "scheduled-20261123T031836Z-1234.db"; name != want {
		t.Errorf("scheduledSnapshotName = %s, want %s", name, want)
	}
	gotTime, gotRev, ok := parseScheduledSnapshotName(name)
	if !ok || !gotTime.Equal(taken.Truncate(time.Second)) || gotRev != 1234 {
		t.Errorf("parseScheduledSnapshotName(%s) = %s, %d, %t", name, gotTime, gotRev, ok)
	}
	for _, other := range []string{
		"by-hand.db",
		"scheduled-20261123T031836Z-1234.db.part",
		".snapshot-123.tmp",
		"scheduled-20261123T031836Z.db",
		"scheduled-20261123T031836-1234.db",
		"scheduled-20261323T031836Z-1234.db", // month 13
		"xscheduled-20261123T031836Z-1234.db",
		"scheduled-20261123T031836Z-99999999999999999999.db", // beyond int64
	} {
		if _, _, ok := parseScheduledSnapshotName(other); ok {
			t.Errorf("parseScheduledSnapshotName(%q) took it for a scheduled snapshot", other)
		}
	}
}

func TestPruneScheduledSnapshots(t *testing.T) {
	// Not scheduled snapshots: never deleted.
	others := []string{
		"by-hand.db",
		"scheduled-20200101T000000Z.db",
		"scheduled-20200101T000000Z-1.db.part",
		".snapshot-1.tmp",
		"notes.txt",
	}
	cases := []struct {
		name  string
		files []string
		keep  int
		want  []string
	}{
		{
			name:  "fewer than kept",
			files: []string{"scheduled-20261123T000000Z-10.db"},
			keep:  5,
			want:  []string{"scheduled-20261123T000000Z-10.db"},
		},
		{
			name: "oldest deleted",
			files: []string{
				"scheduled-20261123T120000Z-30.db",
				"scheduled-20261122T120000Z-10.db",
				"scheduled-20261123T000000Z-20.db",
			},
			keep: 2,
			want: []string{"scheduled-20261123T000000Z-20.db", "scheduled-20261123T120000Z-30.db"},
		},
		{
			name: "same second: lower revision is older",
			files: []string{
				"scheduled-20261123T000000Z-9.db",
				"scheduled-20261123T000000Z-10.db",
			},
			keep: 1,
			want: []string{"scheduled-20261123T000000Z-10.db"},
		},
		{
			name: "keep one",
			files: []string{
				"scheduled-20261121T000000Z-1.db",
				"scheduled-20261122T000000Z-2.db",
				"scheduled-20261123T000000Z-3.db",
			},
			keep: 1,
			want: []string{"scheduled-20261123T000000Z-3.db"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range append(slices.Clone(tc.files), others...) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// A directory named like a scheduled snapshot is not one.
			if err := os.Mkdir(filepath.Join(dir, "scheduled-20000101T000000Z-1.db"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := pruneScheduledSnapshots(klog.Background(), dir, tc.keep); err != nil {
				t.Fatalf("prune: %v", err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			want := append(append(slices.Clone(tc.want), others...), "scheduled-20000101T000000Z-1.db")
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("after keeping %d: %q, want %q", tc.keep, got, want)
			}
		})
	}
}

// The snapshotter takes snapshots on its schedule, keeps the newest, and
// stops when its context ends; a failing snapshot does not stop it.
func TestSnapshotterRun(t *testing.T) {
	socketDir, err := os.MkdirTemp("", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) }) //nolint:errcheck
	member := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: filepath.Join(socketDir, "etcd.sock")})
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{member.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() //nolint:errcheck

	dir := filepath.Join(t.TempDir(), "snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "by-hand.db"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	schedule, err := cron.ParseStandard("@every 1s")
	if err != nil {
		t.Fatal(err)
	}
	s := &Scheduler{source: Source{Endpoint: member.ClientURL()}, dir: dir, schedule: schedule, retention: 2}
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(1)))))
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()

	// A write between snapshots, so that each has a revision of its own.
	seen := map[string]bool{}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := client.Put(ctx, "/registry/tick", time.Now().String()); err != nil {
			return false, err
		}
		for _, name := range scheduledIn(t, dir) {
			seen[name] = true
		}
		return len(seen) >= 3, nil
	})
	if err != nil {
		t.Fatalf("waiting for 3 scheduled snapshots (seen %v): %v", seen, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the snapshotter did not stop within 10s of its context's end")
	}

	kept := scheduledIn(t, dir)
	var all []string
	for name := range seen {
		all = append(all, name)
	}
	slices.Sort(all)
	if len(kept) != 2 || !slices.Equal(kept, all[len(all)-2:]) {
		t.Errorf("kept %q of %q, want the newest 2", kept, all)
	}
	if _, err := os.Stat(filepath.Join(dir, "by-hand.db")); err != nil {
		t.Errorf("retention deleted a file it did not write: %v", err)
	}
	for _, want := range []string{"Took a scheduled etcd snapshot", "Removed a scheduled etcd snapshot beyond the retention"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log at -v=1 lacks %q:\n%s", want, logs.String())
		}
	}

	// A snapshot that cannot be written fails and is logged; the
	// snapshotter runs on until it is stopped.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	failing := *s
	failing.dir = filepath.Join(blocker, "snapshots")
	logs.Reset()
	ctx, cancel = context.WithCancel(klog.NewContext(t.Context(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))))
	done = make(chan struct{})
	go func() {
		defer close(done)
		failing.Run(ctx)
	}()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Count(logs.String(), "Scheduled etcd snapshot failed") >= 2, nil
	}); err != nil {
		t.Fatalf("two failures were not logged: %v\n%s", err, logs.String())
	}
	cancel()
	<-done
}

// scheduledIn returns the scheduled snapshots in dir, oldest first.
func scheduledIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, _, ok := parseScheduledSnapshotName(e.Name()); ok {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestListSnapshots(t *testing.T) {
	dataDir := t.TempDir()
	if got, err := List(dataDir); err != nil || len(got) != 0 {
		t.Errorf("List of a data dir without snapshots = %v, %v; want none", got, err)
	}
	dir := ScheduledDir(dataDir)
	etcdtest.WriteFiles(t, dir, map[string]string{
		"scheduled-20261123T000000Z-5.db": "not a snapshot",
		".snapshot-1.tmp":                 "being written",
		"notes.txt":                       "not a snapshot file",
	})
	by := filepath.Join(dir, "by-hand.db")
	etcdtest.WriteFiles(t, dir, map[string]string{"by-hand.db": "not one either"})
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(by, old, old); err != nil {
		t.Fatal(err)
	}
	got, err := List(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("List = %+v, want by-hand.db and the scheduled one", got)
	}
	// Oldest first: by its modification time, the scheduled one by its name.
	if got[0].Name != "by-hand.db" || !got[0].Time.Equal(old) || got[0].Scheduled {
		t.Errorf("first: %+v, want by-hand.db of %s, not scheduled", got[0], old)
	}
	if got[1].Name != "scheduled-20261123T000000Z-5.db" || !got[1].Scheduled || !got[1].Time.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("second: %+v, want the scheduled one of 2026-11-23T00:00:00Z", got[1])
	}
	for _, s := range got {
		if s.Err == nil || !strings.Contains(s.Err.Error(), "sha256") {
			t.Errorf("%s: Err = %v, want a sha256 failure", s.Name, s.Err)
		}
	}
}
