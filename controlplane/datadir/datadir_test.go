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

// Prepare creates the data dir private, locks it and writes the PKI; a
// second Prepare is refused until Close; Close is safe twice.
func TestPrepare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "data")
	d, err := Prepare(path, Settings{ServingHosts: []string{"localhost", "192.0.2.10"}, EmbeddedEtcd: true})
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("data dir: %v, mode %v, want it created with 0700", err, info.Mode().Perm())
	}
	if d.PKI == nil || !strings.HasPrefix(d.PKI.CA.CertFile, filepath.Join(path, "pki")+string(filepath.Separator)) {
		t.Errorf("PKI %+v, want one under %s/pki", d.PKI, path)
	}
	if _, err := os.Stat(d.PKI.ServingCertFile); err != nil {
		t.Errorf("serving certificate not written: %v", err)
	}
	if want := filepath.Join(path, "run", "etcd.sock"); d.EtcdSocket != want {
		t.Errorf("EtcdSocket = %q, want %q", d.EtcdSocket, want)
	}
	if want := filepath.Join(path, "admin.kubeconfig"); d.KubeconfigPath() != want {
		t.Errorf("KubeconfigPath() = %q, want %q", d.KubeconfigPath(), want)
	}

	if _, err := Prepare(path, Settings{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second Prepare while the first holds it: %v, want it refused as in use", err)
	}
	d.Close()
	d.Close()
	again, err := Prepare(path, Settings{})
	if err != nil {
		t.Fatalf("Prepare after Close: %v", err)
	}
	defer again.Close()
	if again.EtcdSocket != "" {
		t.Errorf("prepared for an external etcd, EtcdSocket = %q, want none", again.EtcdSocket)
	}
	if _, err := again.EtcdConfig(); err == nil || !strings.Contains(err.Error(), "external etcd") {
		t.Errorf("EtcdConfig of a data dir prepared for an external etcd: %v, want a refusal", err)
	}
}

func TestPrepareRefusesBadPaths(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"", "--data-dir must not be empty"},
		{filepath.Join(file, "data"), "cannot be created"},
	} {
		if _, err := Prepare(tc.path, Settings{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prepare(%q): %v, want an error with %q", tc.path, err, tc.want)
		}
	}
}
