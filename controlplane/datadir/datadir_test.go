package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEtcdSocketPath(t *testing.T) {
	const suffix = "/run/etcd.sock"
	// A data dir whose socket path is exactly n bytes long.
	dirFor := func(n int) string { return "/" + strings.Repeat("d", n-len(suffix)-1) }

	for _, tc := range []struct {
		name    string
		dataDir string
	}{
		{name: "short", dataDir: "/var/lib/sgcp"},
		{name: "longest that fits", dataDir: dirFor(maxUnixSocketPath)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket, cleanup, err := etcdSocketPath(tc.dataDir)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(tc.dataDir, "run", "etcd.sock"); socket != want {
				t.Errorf("socket = %q, want %q", socket, want)
			}
			if cleanup != nil {
				t.Error("a socket in the data dir has a cleanup")
			}
		})
	}

	for _, tc := range []struct {
		name    string
		dataDir string
	}{
		{name: "one byte too long", dataDir: dirFor(maxUnixSocketPath + 1)},
		{name: "very long", dataDir: dirFor(400)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket, cleanup, err := etcdSocketPath(tc.dataDir)
			if err != nil {
				t.Fatal(err)
			}
			if cleanup == nil {
				t.Fatal("a socket outside the data dir has no cleanup")
			}
			dir := filepath.Dir(socket)
			t.Cleanup(func() { os.RemoveAll(dir) }) //nolint:errcheck // in case cleanup fails
			if len(socket) > maxUnixSocketPath {
				t.Errorf("socket %q is %d bytes long, more than %d", socket, len(socket), maxUnixSocketPath)
			}
			if !strings.HasPrefix(socket, os.TempDir()+string(filepath.Separator)) {
				t.Errorf("socket %q is not under %s", socket, os.TempDir())
			}
			info, err := os.Stat(dir)
			if err != nil {
				t.Fatalf("socket dir: %v", err)
			}
			if got := info.Mode().Perm(); got != 0o700 {
				t.Errorf("socket dir %s has mode %o, want 700", dir, got)
			}
			if _, err := os.Stat(socket); !os.IsNotExist(err) {
				t.Errorf("socket %s exists before etcd starts: %v", socket, err)
			}

			cleanup()
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("cleanup left %s behind: %v", dir, err)
			}
		})
	}
}
