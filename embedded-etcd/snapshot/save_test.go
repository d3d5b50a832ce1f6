package snapshot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
)

// snapshotOf starts a member, writes keys to it, saves a snapshot of it into
// a new directory and stops it. It returns the snapshot and the revision of
// the last write.
func snapshotOf(t *testing.T, keys int) (string, Status, int64) {
	t.Helper()
	s := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: etcdtest.SocketPath(t)})
	c := etcdtest.Client(t, s)
	var last int64
	for i := range keys {
		resp, err := c.Put(etcdtest.RequestContext(t), fmt.Sprintf("/registry/k%d", i), fmt.Sprintf("v%d", i))
		if err != nil {
			t.Fatalf("put: %v", err)
		}
		last = resp.Header.Revision
	}
	dir := t.TempDir()
	path, status, err := Save(etcdtest.RequestContext(t), Source{Endpoint: s.ClientURL()}, dir, func(st Status) string {
		return fmt.Sprintf("snap-%d.db", st.Revision)
	})
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	s.Close()
	return path, status, last
}

func TestSaveSnapshot(t *testing.T) {
	path, status, last := snapshotOf(t, 20)
	if status.Revision != last || status.Keys != 20 {
		t.Errorf("snapshot status: revision %d, %d keys; want revision %d (the last write's), 20 keys", status.Revision, status.Keys, last)
	}
	if want := fmt.Sprintf("snap-%d.db", last); filepath.Base(path) != want {
		t.Errorf("snapshot saved as %s, want %s (the name the callback gave for its status)", filepath.Base(path), want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != status.Size {
		t.Errorf("status size %d, file size %d", status.Size, info.Size())
	}
	// Snapshots hold every Secret: readable by their owner only.
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("snapshot mode %o, want 600", mode)
	}
	// Nothing but the snapshot: no temporary file left behind.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("snapshot dir holds %q, want only %s", names, filepath.Base(path))
	}
	again, err := Verify(path)
	if err != nil || again != status {
		t.Errorf("Verify = %+v, %v; want %+v, the status Save returned", again, err, status)
	}
}

func TestSaveSnapshotUnreachable(t *testing.T) {
	dir := t.TempDir()
	endpoint := "unix://" + filepath.Join(dir, "missing.sock")
	// The context ends the wait sooner than snapshotConnectTimeout would.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, _, err := Save(ctx, Source{Endpoint: endpoint}, dir, func(Status) string { return "never.db" })
	if err == nil || !strings.Contains(err.Error(), endpoint) {
		t.Errorf("snapshot from nothing: err = %v, want one that names %s", err, endpoint)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed snapshot left %d files in %s", len(entries), dir)
	}
}

func TestVerifySnapshotRejectsDamage(t *testing.T) {
	good, _, _ := snapshotOf(t, 5)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		content func() []byte
	}{
		{"last byte missing", func() []byte { return data[:len(data)-1] }},
		{"hash missing", func() []byte { return data[:len(data)-32] }},
		{"byte flipped", func() []byte {
			bad := append([]byte(nil), data...)
			bad[len(bad)/2] ^= 0xff
			return bad
		}},
		{"empty", func() []byte { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.db")
			if err := os.WriteFile(path, tc.content(), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(path); !errors.Is(err, ErrHash) || !strings.Contains(err.Error(), path) {
				t.Errorf("Verify = %v, want an ErrHash that names %s", err, path)
			}
			if _, err := RestoreMember(path, filepath.Join(t.TempDir(), "etcd")); !errors.Is(err, ErrHash) {
				t.Errorf("RestoreMember = %v, want ErrHash", err)
			}
		})
	}
}

// A restored member starts with the snapshot's keys, and its revisions go
// on past the snapshot's by RestoreRevisionBump; what came before is
// compacted.
func TestRestoreSnapshot(t *testing.T) {
	path, status, _ := snapshotOf(t, 10)
	dataDir := filepath.Join(t.TempDir(), "etcd")
	restored, err := RestoreMember(path, dataDir)
	if err != nil {
		t.Fatalf("RestoreMember: %v", err)
	}
	if restored != status {
		t.Errorf("RestoreMember returned %+v, want the snapshot's status %+v", restored, status)
	}

	s := etcdtest.StartMember(t, embeddedetcd.Config{DataDir: dataDir, SocketPath: etcdtest.SocketPath(t)})
	c := etcdtest.Client(t, s)
	for i := range 10 {
		if v, ok := get(t, c, fmt.Sprintf("/registry/k%d", i)); !ok || v != fmt.Sprintf("v%d", i) {
			t.Errorf("restored member: /registry/k%d = %q (found %t), want v%d", i, v, ok, i)
		}
	}
	resp, err := c.Put(etcdtest.RequestContext(t), "/registry/after", "x")
	if err != nil {
		t.Fatalf("put after restore: %v", err)
	}
	if min := status.Revision + RestoreRevisionBump; resp.Header.Revision <= min {
		t.Errorf("first write after the restore has revision %d, want more than %d (the snapshot's %d + %d)", resp.Header.Revision, min, status.Revision, RestoreRevisionBump)
	}
	if _, err := c.Get(etcdtest.RequestContext(t), "/registry/k0", clientv3.WithRev(status.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("reading at the snapshot's revision %d after the restore: err = %v, want %v", status.Revision, err, rpctypes.ErrCompacted)
	}
	members, err := c.MemberList(etcdtest.RequestContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 1 || members.Members[0].Name != "embedded" {
		t.Errorf("restored member list %v, want the one member \"embedded\"", members.Members)
	}
}

func TestRestoreSnapshotIntoNonEmptyDir(t *testing.T) {
	path, _, _ := snapshotOf(t, 1)
	dataDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreMember(path, dataDir); err == nil {
		t.Fatal("RestoreMember into a non-empty dir succeeded")
	}
	if got, err := os.ReadFile(filepath.Join(dataDir, "keep")); err != nil || string(got) != "x" {
		t.Errorf("the file in the non-empty dir: %q, %v", got, err)
	}
}

// A snapshot that a newer etcd took is refused before anything is written:
// Start would refuse the restored member.
func TestRestoreSnapshotRefusesNewerStorageVersion(t *testing.T) {
	path, _, _ := snapshotOf(t, 1)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The database without its hash, marked as a newer etcd would, and
	// hashed again as etcd would have.
	newer := filepath.Join(t.TempDir(), "newer.db")
	if err := os.WriteFile(newer, data[:len(data)-sha256.Size], 0o600); err != nil {
		t.Fatal(err)
	}
	etcdtest.SetStorageVersion(t, newer, "3.8.0")
	db, err := os.ReadFile(newer)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(db)
	if err := os.WriteFile(newer, append(db, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}

	dataDir := filepath.Join(t.TempDir(), "etcd")
	_, err = RestoreMember(newer, dataDir)
	if !errors.Is(err, embeddedetcd.ErrNewerStorageVersion) || !strings.Contains(err.Error(), "3.8") || !strings.Contains(err.Error(), "with the release that took it") {
		t.Errorf("RestoreMember of a 3.8 snapshot: %v; want ErrNewerStorageVersion saying what to do", err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused restore created %s (%v)", dataDir, err)
	}
}

func get(t *testing.T, c *clientv3.Client, key string) (string, bool) {
	t.Helper()
	resp, err := c.Get(etcdtest.RequestContext(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}
