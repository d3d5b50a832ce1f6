package datadir

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ourDataDir makes dir look like the data dir of a stopped control plane
// with an embedded etcd member.
func ourDataDir(t *testing.T, dir string) string {
	t.Helper()
	for _, sub := range []string{pkiDirName, etcdDirName} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEmbeddedEtcdEndpoint(t *testing.T) {
	empty := t.TempDir()
	if _, err := EmbeddedEtcdEndpoint(empty); err == nil || !strings.Contains(err.Error(), "is not the data dir of a control plane") {
		t.Errorf("EmbeddedEtcdEndpoint of an empty dir: %v, want an error saying it is not a data dir", err)
	}
	dir := ourDataDir(t, t.TempDir())
	_, err := EmbeddedEtcdEndpoint(dir)
	for _, want := range []string{"no control plane with an embedded etcd runs on data dir " + dir, "start it", "--etcd-servers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EmbeddedEtcdEndpoint of a stopped control plane's dir: %v, want an error with %q", err, want)
		}
	}
	// A socket left behind by a control plane that was killed refuses.
	socket := filepath.Join(dir, "run", "etcd.sock")
	if err := os.MkdirAll(filepath.Dir(socket), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() //nolint:errcheck
	if _, err := EmbeddedEtcdEndpoint(dir); err == nil || !strings.Contains(err.Error(), "no control plane with an embedded etcd runs") {
		t.Errorf("EmbeddedEtcdEndpoint with a stale socket: %v, want an error saying none runs", err)
	}

	long := ourDataDir(t, filepath.Join(dir, strings.Repeat("d", maxUnixSocketPath)))
	if _, err := EmbeddedEtcdEndpoint(long); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("EmbeddedEtcdEndpoint of a long data dir: %v, want an error saying it is too long", err)
	}
}
