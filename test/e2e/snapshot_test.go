package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// snapshotWriters is how many clients write at once while a snapshot
	// is taken.
	snapshotWriters = 4
	// writesAround is how many writes each side of the snapshot must be
	// acknowledged, so that the test proves something both ways.
	writesAround = 20
	// restoreBump is snapshot.RestoreRevisionBump, as users see it.
	restoreBump = 1_000_000_000
	// restoredLine is what the first start after a restore logs.
	restoredLine = "Removed the etcd data that a snapshot restore replaced"
)

// savedSnapshot matches what "snapshot save" prints.
var savedSnapshot = regexp.MustCompile(`(?m)^Saved snapshot (\S+)\n  revision: (\d+)\n  keys: +(\d+)\n  size: +.+\((\d+) bytes\)$`)

// A snapshot saved while clients write holds exactly the writes acknowledged
// up to its revision. After a restore (refused while the control plane runs)
// and a start, every acknowledged write with a resourceVersion up to the
// snapshot's revision is there, none after it, and new writes get
// resourceVersions beyond any seen before.
func TestSnapshotSaveUnderLoadAndRestore(t *testing.T) {
	c := startCluster(t, Spec{})
	const ns = "snapshot-e2e"
	load := startConfigMapWriters(t, c, ns, snapshotWriters)
	load.waitForAcks(t, writesAround, time.Minute)
	snapshotsDir := filepath.Join(c.DataDir, "snapshots")
	if err := os.MkdirAll(snapshotsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(snapshotsDir, "under-load.db")
	res := runBinary(t, "snapshot", "save", file, "--data-dir="+c.DataDir)
	if res.ExitCode != 0 {
		t.Fatalf("snapshot save: exit code %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	saved := savedSnapshot.FindStringSubmatch(res.Stdout)
	if saved == nil || saved[1] != file {
		t.Fatalf("snapshot save printed:\n%s\nwant %q with its revision, keys and size", res.Stdout, "Saved snapshot "+file)
	}
	revision, _ := strconv.ParseInt(saved[2], 10, 64)
	load.waitForAcks(t, writesAround, time.Minute)
	load.stop()
	acked := load.acknowledged()

	var before, after int
	for _, rv := range acked {
		if rv <= revision {
			before++
		} else {
			after++
		}
	}
	if before == 0 || after == 0 {
		t.Fatalf("of %d acknowledged writes, %d have a resourceVersion up to the snapshot's revision %d and %d after it; want some of both", len(acked), before, revision, after)
	}
	failed, _ := load.failed()
	t.Logf("%d writes acknowledged (%d up to revision %d, %d after), %d failed", len(acked), before, revision, after, failed)

	res = runBinary(t, "snapshot", "list", "--data-dir="+c.DataDir)
	row := regexp.MustCompile(`(?m)^under-load\.db\s+\S+\s+` + saved[2] + `\s+` + saved[3] + `\s+.+\s+yes$`)
	if res.ExitCode != 0 || !row.MatchString(res.Stdout) {
		t.Errorf("snapshot list: exit code %d\n%s%s\nwant a verified row for under-load.db at revision %s", res.ExitCode, res.Stdout, res.Stderr, saved[2])
	}

	// Refused while the control plane runs, naming it, and nothing changes.
	res = runBinary(t, "snapshot", "restore", file, "--data-dir="+c.DataDir)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "cannot restore while a control plane runs") || !strings.Contains(res.Stderr, "in use") {
		t.Errorf("snapshot restore while running: exit code %d, stderr:\n%s\nwant it refused because the control plane runs", res.ExitCode, res.Stderr)
	}
	if aside := replacedDirs(t, c.DataDir); len(aside) > 0 {
		t.Errorf("the refused restore left %q", aside)
	}

	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop: %v", err)
	}
	res = runBinary(t, "snapshot", "restore", file, "--data-dir="+c.DataDir)
	if res.ExitCode != 0 {
		t.Fatalf("snapshot restore: exit code %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	aside := replacedDirs(t, c.DataDir)
	if len(aside) != 1 || !strings.Contains(res.Stdout, aside[0]) {
		t.Errorf("after the restore the data dir has %q beside etcd/; want the one dir the restore printed:\n%s", aside, res.Stdout)
	}

	restored := startCluster(t, Spec{WorkDir: c.WorkDir, DataDir: c.DataDir, Port: c.Port})
	if left := replacedDirs(t, c.DataDir); len(left) > 0 {
		t.Errorf("the start on the restored member left %q", left)
	}
	if n := strings.Count(readFile(t, restored.StderrPath), restoredLine); n != 1 {
		t.Errorf("the start after the restore logged %q %d times, want once (%s)", restoredLine, n, restored.StderrPath)
	}

	client := clientset(t, restored)
	list, err := client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the restored config maps: %v", err)
	}
	present := map[string]string{}
	for _, cm := range list.Items {
		present[cm.Name] = cm.ResourceVersion
		// Whatever is there, acknowledged or not, was stored up to
		// the snapshot's revision.
		if rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64); rv > revision {
			t.Errorf("config map %s has resourceVersion %d after the restore, past the snapshot's %d", cm.Name, rv, revision)
		}
	}
	for name, rv := range acked {
		got, ok := present[name]
		switch {
		case rv <= revision && !ok:
			t.Errorf("config map %s (resourceVersion %d, up to the snapshot's %d) is missing after the restore", name, rv, revision)
		case rv <= revision && got != strconv.FormatInt(rv, 10):
			t.Errorf("config map %s has resourceVersion %s after the restore, want %d as written", name, got, rv)
		case rv > revision && ok:
			t.Errorf("config map %s (resourceVersion %d, after the snapshot's %d) is there after the restore", name, rv, revision)
		}
	}

	cm, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restore"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("writing after the restore: %v", err)
	}
	if rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64); rv <= revision+restoreBump {
		t.Errorf("the first write after the restore has resourceVersion %s, want more than %d (the snapshot's %d + %d): clients would see revisions go back", cm.ResourceVersion, revision+restoreBump, revision, int64(restoreBump))
	}
}

// Scheduled snapshots are taken while the control plane runs, only the
// newest --embedded-etcd-snapshot-retention of them are kept, and files the
// control plane did not write are never deleted.
func TestSnapshotSchedule(t *testing.T) {
	spec := Spec{WorkDir: t.TempDir(), Flags: []string{"--embedded-etcd-snapshot-schedule=@every 1s", "--embedded-etcd-snapshot-retention=2"}}
	spec.DataDir = filepath.Join(spec.WorkDir, "data")
	dir := filepath.Join(spec.DataDir, "snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "mine.db")
	if err := os.WriteFile(mine, []byte("not a snapshot the control plane took"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, spec)

	seen := map[string]bool{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		for _, name := range scheduledSnapshots(t, dir) {
			seen[name] = true
		}
		return len(seen) >= 3, nil
	})
	if err != nil {
		t.Fatalf("waiting for 3 scheduled snapshots (seen %d: %v): %v", len(seen), seen, err)
	}
	// A stop while snapshots are due ends cleanly.
	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop: %v", err)
	}

	kept := scheduledSnapshots(t, dir)
	if len(kept) != 2 {
		t.Fatalf("%d scheduled snapshots kept (%q), want 2", len(kept), kept)
	}
	for name := range seen {
		if !slices.Contains(kept, name) && name > kept[0] {
			t.Errorf("%s was deleted, but it is newer than %s, which was kept", name, kept[0])
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a file the control plane did not write is gone: %v", err)
	}

	res := runBinary(t, "snapshot", "list", "--data-dir="+c.DataDir)
	if res.ExitCode != 0 {
		t.Fatalf("snapshot list: exit code %d\n%s", res.ExitCode, res.Stderr)
	}
	for _, name := range kept {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s.*\syes$`).MatchString(res.Stdout) {
			t.Errorf("snapshot list does not show %s as verified:\n%s", name, res.Stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^mine\.db\s.*\sno: `).MatchString(res.Stdout) {
		t.Errorf("snapshot list does not show mine.db as failing to verify:\n%s", res.Stdout)
	}
}

// save says what to do when nothing runs on the data dir, and takes a
// snapshot of one member of an external etcd, over TLS with a client
// certificate.
func TestSnapshotSaveWithoutEmbeddedEtcd(t *testing.T) {
	dataDir := t.TempDir()
	// What a stopped control plane leaves: its PKI and its member's data.
	for _, dir := range []string{"pki", "etcd"} {
		if err := os.Mkdir(filepath.Join(dataDir, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	res := runBinary(t, "snapshot", "save", filepath.Join(dataDir, "s.db"), "--data-dir="+dataDir)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "no control plane with an embedded etcd runs on data dir "+dataDir) || !strings.Contains(res.Stderr, "--etcd-servers") {
		t.Errorf("snapshot save with nothing running: exit code %d, stderr:\n%s\nwant it to say to start the control plane or pass --etcd-servers", res.ExitCode, res.Stderr)
	}

	member := startEtcdCluster(t, 1)[0]
	file := filepath.Join(t.TempDir(), "external.db")
	res = runBinary(t, append([]string{"snapshot", "save", file}, etcdFlags(member)...)...)
	if saved := savedSnapshot.FindStringSubmatch(res.Stdout); res.ExitCode != 0 || saved == nil || saved[1] != file {
		t.Errorf("snapshot save %q: exit code %d\nstdout:\n%s\nstderr:\n%s", etcdFlags(member), res.ExitCode, res.Stdout, res.Stderr)
	}
	res = runBinary(t, append([]string{"snapshot", "save", file}, etcdFlags(member, member)...)...)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "name one") {
		t.Errorf("snapshot save from two endpoints: exit code %d, stderr:\n%s\nwant it refused", res.ExitCode, res.Stderr)
	}
}

// replacedDirs are the member data dirs a restore moved aside in dataDir.
func replacedDirs(t *testing.T, dataDir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dataDir, "etcd.pre-restore-*"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// scheduledSnapshots are the scheduled snapshots in dir, oldest first.
func scheduledSnapshots(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "scheduled-") && strings.HasSuffix(e.Name(), ".db") {
			names = append(names, e.Name())
		}
	}
	return names
}
