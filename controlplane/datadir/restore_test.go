package datadir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

// restoreTime is the time the tests' restores happen at.
var restoreTime = time.Date(2026, 11, 23, 4, 18, 36, 0, time.UTC)

// dataDirWithMember returns a data dir as a stopped control plane on the
// embedded etcd leaves it: a lock, a kubeconfig, PKI, a member and
// snapshots. The member is a stand-in: restores in these tests are fakes
// unless a test takes a real snapshot.
func dataDirWithMember(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	etcdtest.WriteFiles(t, dir, map[string]string{
		"admin.kubeconfig":                "kubeconfig",
		"pki/ca.crt":                      "ca",
		"etcd/member/snap/db":             "old database",
		"etcd/member/wal/0.wal":           "old wal",
		"snapshots/scheduled-x.db":        "a snapshot",
		"snapshots/by-hand.db":            "another",
		"run/etcd.sock.is-not-a-real-one": "",
	})
	lock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	lock.release()
	return dir
}

// tree returns every file and directory under dir with its mode and content.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		entry := info.Mode().String()
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			entry += " " + string(data)
		}
		files[rel] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func diffTrees(before, after map[string]string) []string {
	var diffs []string
	for name, b := range before {
		if a, ok := after[name]; !ok {
			diffs = append(diffs, "removed "+name)
		} else if a != b {
			diffs = append(diffs, fmt.Sprintf("changed %s: %q → %q", name, b, a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, "added "+name)
		}
	}
	return diffs
}

// fakeRestore writes a member into dir, as snapshot.RestoreMember
// would, then fails with err if it is not nil.
func fakeRestore(err error) restoreFunc {
	return func(file, dir string) (snapshot.Status, error) {
		if err := os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700); err != nil {
			return snapshot.Status{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "member", "snap", "db"), []byte("restored from "+file), 0o600); err != nil {
			return snapshot.Status{}, err
		}
		if err != nil {
			return snapshot.Status{}, err
		}
		return snapshot.Status{Revision: 42, Keys: 7}, nil
	}
}

func snapshotFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.db")
	if err := os.WriteFile(path, []byte("a snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRestoreSnapshotReplacesMember(t *testing.T) {
	dir := dataDirWithMember(t)
	file := snapshotFile(t)
	before := tree(t, dir)

	result, err := restoreSnapshot(t.Context(), dir, file, fakeRestore(nil), restoreTime)
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	wantAside := filepath.Join(dir, "etcd.pre-restore-20261123T041836Z")
	if result.EtcdDir != filepath.Join(dir, "etcd") || result.ReplacedDir != wantAside || result.Snapshot.Revision != 42 {
		t.Errorf("result %+v, want etcd dir %s/etcd, replaced dir %s, revision 42", result, dir, wantAside)
	}
	after := tree(t, dir)
	if got := after["etcd/member/snap/db"]; !strings.HasSuffix(got, "restored from "+file) {
		t.Errorf("etcd/member/snap/db after the restore: %q, want the restored member", got)
	}
	if _, ok := after["etcd/member/wal/0.wal"]; ok {
		t.Error("the old member's WAL is still in etcd/: the new member was mixed into the old one")
	}
	// The old member is aside, whole; everything else is as it was.
	for name, entry := range before {
		rel, isMember := strings.CutPrefix(name, "etcd")
		switch {
		case name == "etcd" || name == "lock":
		case isMember:
			if after["etcd.pre-restore-20261123T041836Z"+rel] != entry {
				t.Errorf("%s of the old member is not in the aside dir as it was", name)
			}
		case after[name] != entry:
			t.Errorf("%s changed: %q → %q", name, entry, after[name])
		}
	}
	for name := range after {
		if strings.HasPrefix(name, restoringEtcdPrefix) {
			t.Errorf("%s left behind", name)
		}
	}

	// A second restore in the same second finds the name taken.
	result, err = restoreSnapshot(t.Context(), dir, file, fakeRestore(nil), restoreTime)
	if err != nil {
		t.Fatalf("second restore: %v", err)
	}
	if want := wantAside + "-2"; result.ReplacedDir != want {
		t.Errorf("second restore in the same second moved the member aside to %s, want %s", result.ReplacedDir, want)
	}
}

// When the restore fails, or is refused, the data dir is left as it was.
func TestRestoreSnapshotLeavesDataDirOnFailure(t *testing.T) {
	corrupt := filepath.Join(t.TempDir(), "corrupt.db")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte{1}, 4096+32), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		file    func(t *testing.T) string
		restore restoreFunc
		// prepare runs on the data dir before the restore, and returns
		// what to undo before the data dir is compared.
		prepare  func(t *testing.T, dir string) func()
		wantErrs []string
	}{
		{
			name:     "restore fails midway",
			file:     snapshotFile,
			restore:  fakeRestore(errors.New("disk full")),
			wantErrs: []string{"disk full"},
		},
		{
			name:     "snapshot hash does not verify",
			file:     func(*testing.T) string { return corrupt },
			restore:  snapshot.RestoreMember,
			wantErrs: []string{corrupt, "sha256"},
		},
		{
			name:     "snapshot missing",
			file:     func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing.db") },
			restore:  fakeRestore(nil),
			wantErrs: []string{"missing.db does not exist", "snapshot list"},
		},
		{
			name:     "snapshot is a directory",
			file:     func(t *testing.T) string { return t.TempDir() },
			restore:  fakeRestore(nil),
			wantErrs: []string{"is not a file"},
		},
		{
			name:    "control plane running",
			file:    snapshotFile,
			restore: fakeRestore(nil),
			prepare: func(t *testing.T, dir string) func() {
				lock, err := lockDataDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				return lock.release
			},
			wantErrs: []string{"cannot restore while a control plane runs", "is in use", "pid " + strconv.Itoa(os.Getpid()), "stop it, then run the restore again"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDirWithMember(t)
			file := tc.file(t)
			before := tree(t, dir)
			undo := func() {}
			if tc.prepare != nil {
				undo = tc.prepare(t, dir)
			}
			_, err := restoreSnapshot(t.Context(), dir, file, tc.restore, restoreTime)
			undo()
			if err == nil {
				t.Fatal("restore succeeded")
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("restore: %q, want it to contain %q", err, want)
				}
			}
			if diffs := diffTrees(before, tree(t, dir)); len(diffs) > 0 {
				t.Errorf("the failed restore changed the data dir:\n%s", strings.Join(diffs, "\n"))
			}
		})
	}
}

func TestRestoreSnapshotRefusesExternalEtcdDataDir(t *testing.T) {
	dir := t.TempDir()
	etcdtest.WriteFiles(t, dir, map[string]string{"admin.kubeconfig": "kubeconfig", "pki/ca.crt": "ca"})
	before := tree(t, dir)
	_, err := restoreSnapshot(t.Context(), dir, snapshotFile(t), fakeRestore(nil), restoreTime)
	if err == nil {
		t.Fatal("restore into the data dir of a control plane on external etcd succeeded")
	}
	for _, want := range []string{"has no embedded etcd member", "--etcd-servers", "etcdutl snapshot restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("restore: %q, want it to contain %q", err, want)
		}
	}
	after := tree(t, dir)
	delete(after, "lock") // taken and released
	if diffs := diffTrees(before, after); len(diffs) > 0 {
		t.Errorf("the refused restore changed the data dir:\n%s", strings.Join(diffs, "\n"))
	}
}

// A data dir that does not exist (a new machine) is created by a restore,
// and removed again when the restore fails.
func TestRestoreSnapshotNewDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	if _, err := restoreSnapshot(t.Context(), dir, snapshotFile(t), fakeRestore(errors.New("disk full")), restoreTime); err == nil {
		t.Fatal("failing restore succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed restore into a new data dir left it behind (%v)", err)
	}
	result, err := restoreSnapshot(t.Context(), dir, snapshotFile(t), fakeRestore(nil), restoreTime)
	if err != nil {
		t.Fatalf("restore into a new data dir: %v", err)
	}
	if result.ReplacedDir != "" {
		t.Errorf("restore into a new data dir replaced %s", result.ReplacedDir)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("new data dir: %v, %v; want mode 0700", info, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd", "member", "snap", "db")); err != nil {
		t.Errorf("restored member: %v", err)
	}
}

func TestRemoveReplacedEtcdData(t *testing.T) {
	dir := t.TempDir()
	etcdtest.WriteFiles(t, dir, map[string]string{
		"etcd/member/snap/db":                              "running member",
		"etcd.pre-restore-20261123T041836Z/member/snap/db": "replaced",
		"etcd.pre-restore-20261123T041836Z-2/member/wal/w": "replaced again",
		"etcd.restoring-123/member/snap/db":                "interrupted",
		"etcd.backup/member/snap/db":                       "the user's own copy",
		"snapshots/scheduled-20261123T041836Z-5.db":        "snapshot",
	})
	var logs bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs)))
	removeReplacedEtcdData(logger, dir)

	for _, gone := range []string{"etcd.pre-restore-20261123T041836Z", "etcd.pre-restore-20261123T041836Z-2", "etcd.restoring-123"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{"etcd/member/snap/db", "etcd.backup/member/snap/db", "snapshots/scheduled-20261123T041836Z-5.db"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	// One line for each directory removed.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 || strings.Count(logs.String(), "Removed the etcd data that a snapshot restore replaced") != 2 {
		t.Errorf("logged:\n%s\nwant one line for each of the 3 directories removed", logs.String())
	}
}

// A snapshot of a real member restores into a data dir, and the member
// starts on it; what it replaced is removed by removeReplacedEtcdData.
func TestRestoreSnapshotOfRealMember(t *testing.T) {
	socketDir, err := os.MkdirTemp("", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) }) //nolint:errcheck
	dir := t.TempDir()
	cfg := embeddedetcd.Config{DataDir: filepath.Join(dir, "etcd"), SocketPath: filepath.Join(socketDir, "etcd.sock")}
	member := etcdtest.StartMember(t, cfg)
	snapshots := t.TempDir()
	path, status, err := snapshot.Save(t.Context(), snapshot.Source{Endpoint: member.ClientURL()}, snapshots, func(snapshot.Status) string { return "s.db" })
	if err != nil {
		t.Fatalf("SaveSnapshot: %v", err)
	}
	member.Close()

	result, err := RestoreSnapshot(t.Context(), dir, path)
	if err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	if result.Snapshot != status {
		t.Errorf("restored %+v, want the saved snapshot's status %+v", result.Snapshot, status)
	}
	etcdtest.StartMember(t, cfg).Close()
	removeReplacedEtcdData(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&bytes.Buffer{}))), dir)
	if _, err := os.Stat(result.ReplacedDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there after the start (%v)", result.ReplacedDir, err)
	}
}

// A restore killed between moving the old member aside and moving the
// restored one into place leaves no etcd/: the next start must not let etcd
// create an empty member there (and then remove both members as leftovers),
// and a second restore completes the first.
func TestInterruptedRestore(t *testing.T) {
	for _, tc := range []struct {
		name string
		left map[string]string
	}{
		{"old member aside, restored one written", map[string]string{
			"etcd.pre-restore-20261123T041836Z/member/snap/db": "old database",
			"etcd.restoring-123/member/snap/db":                "restored database",
		}},
		{"restored one written into a new data dir", map[string]string{
			"etcd.restoring-123/member/snap/db": "restored database",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			etcdtest.WriteFiles(t, dir, map[string]string{"admin.kubeconfig": "kubeconfig", "pki/ca.crt": "ca"})
			etcdtest.WriteFiles(t, dir, tc.left)
			before := tree(t, dir)

			err := checkNoInterruptedRestore(dir)
			if err == nil {
				t.Fatal("a start on a data dir whose restore was interrupted went ahead")
			}
			for _, want := range []string{"snapshot restore was interrupted", "etcd.restoring-123", `Run "snapshot restore" again`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("start: %q, want it to contain %q", err, want)
				}
			}
			if diffs := diffTrees(before, tree(t, dir)); len(diffs) > 0 {
				t.Errorf("the refused start changed the data dir:\n%s", strings.Join(diffs, "\n"))
			}

			if _, err := restoreSnapshot(t.Context(), dir, snapshotFile(t), fakeRestore(nil), restoreTime); err != nil {
				t.Fatalf("a second restore: %v", err)
			}
			if err := checkNoInterruptedRestore(dir); err != nil {
				t.Errorf("start after the second restore: %v", err)
			}
		})
	}

	// Without leftovers, and with a member, a start goes ahead.
	if err := checkNoInterruptedRestore(dataDirWithMember(t)); err != nil {
		t.Errorf("start on a data dir with a member: %v", err)
	}
	if err := checkNoInterruptedRestore(t.TempDir()); err != nil {
		t.Errorf("start on a new data dir: %v", err)
	}
}
