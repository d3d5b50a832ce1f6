package embeddedetcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
)

// socketPath returns a socket path in a fresh, short directory (a unix
// socket path must fit in 107 bytes, which t.TempDir() may exceed). The
// socket lives in a subdirectory "run" that Start has to create.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return filepath.Join(dir, "run", "etcd.sock")
}

// start starts a member and waits until it is ready; it is closed when the test ends.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return s
}

func newClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.ClientURL()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.ClientURL(), err)
	}
	t.Cleanup(func() { c.Close() }) //nolint:errcheck // closed twice when the test closes it first
	return c
}

func requestContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func get(t *testing.T, c *clientv3.Client, key string) (string, bool) {
	t.Helper()
	resp, err := c.Get(requestContext(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false
	}
	return string(resp.Kvs[0].Value), true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStartServeCloseRestart(t *testing.T) {
	cfg := Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: socketPath(t)}
	s := start(t, cfg)

	if want := "unix://" + cfg.SocketPath; s.ClientURL() != want {
		t.Errorf("ClientURL() = %q, want %q", s.ClientURL(), want)
	}
	if !isClosed(s.Ready()) {
		t.Error("Ready() not closed after WaitReady")
	}
	if isClosed(s.Stopped()) {
		t.Fatal("Stopped() closed while the member runs")
	}
	for path, want := range map[string]os.FileMode{filepath.Dir(cfg.SocketPath): 0o700, cfg.DataDir: 0o700} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
	}
	if info, err := os.Stat(cfg.SocketPath); err != nil || info.Mode().Type() != os.ModeSocket {
		t.Errorf("%s is not a socket: %v, %v", cfg.SocketPath, info, err)
	}

	c := newClient(t, s)
	if _, err := c.Put(requestContext(t), "/registry/test", "kept"); err != nil {
		t.Fatalf("put: %v", err)
	}
	if v, ok := get(t, c, "/registry/test"); !ok || v != "kept" {
		t.Fatalf("get = %q, %v; want %q", v, ok, "kept")
	}
	if size, inUse := s.DBSize(); size <= 0 || inUse <= 0 || inUse > size {
		t.Errorf("DBSize() = %d, %d; want 0 < inUse <= size", size, inUse)
	}
	c.Close() //nolint:errcheck

	closed := make(chan struct{})
	go func() {
		s.Close()
		s.Close() // idempotent: must neither block nor panic
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30s")
	}
	if !isClosed(s.Stopped()) {
		t.Error("Stopped() not closed after Close")
	}

	// A socket file left behind (as by a killed process) and a socket dir
	// whose mode was loosened do not stop a restart on the same data.
	if err := os.WriteFile(cfg.SocketPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(cfg.SocketPath), 0o755); err != nil {
		t.Fatal(err)
	}
	s = start(t, cfg)
	info, err := os.Stat(filepath.Dir(cfg.SocketPath))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o700 {
		t.Errorf("socket dir has mode %o after restart, want 700", got)
	}
	c = newClient(t, s)
	if v, ok := get(t, c, "/registry/test"); !ok || v != "kept" {
		t.Errorf("after restart get = %q, %v; want %q", v, ok, "kept")
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	sock := socketPath(t)
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no data dir", cfg: Config{SocketPath: sock}, wantErr: "DataDir and SocketPath are required"},
		{name: "no socket", cfg: Config{DataDir: t.TempDir()}, wantErr: "DataDir and SocketPath are required"},
		{name: "bad log level", cfg: Config{DataDir: t.TempDir(), SocketPath: sock, LogLevel: "loud"}, wantErr: `log level "loud"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(t.Context(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Start: %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// DefragmentIfFragmented, the step a start takes once the member is ready,
// shrinks a database more than half free, and leaves others alone.
func TestDefragmentIfFragmented(t *testing.T) {
	const keys, valueSize = 200, 32 << 10
	cases := []struct {
		name string
		// deleted is how many of the keys are deleted (and compacted away)
		// before the restart.
		deleted    int
		wantDefrag bool
	}{
		// More than half of the file is free: defragmented at start.
		{name: "all deleted", deleted: keys, wantDefrag: true},
		{name: "most deleted", deleted: keys * 7 / 10, wantDefrag: true},
		// Less than half free: left alone.
		{name: "a quarter deleted", deleted: keys / 4},
		{name: "none deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: socketPath(t)}
			s := start(t, cfg)
			c := newClient(t, s)

			value := strings.Repeat("x", valueSize)
			for i := range keys {
				if _, err := c.Put(requestContext(t), fmt.Sprintf("/bulk/%04d", i), value); err != nil {
					t.Fatalf("put %d: %v", i, err)
				}
			}
			// DBSize follows the backend's batched commits (every 100ms).
			full := waitForDBSize(t, s, func(size, _ int64) bool { return size >= keys*valueSize })
			rev := int64(0)
			for i := range tc.deleted {
				resp, err := c.Delete(requestContext(t), fmt.Sprintf("/bulk/%04d", i))
				if err != nil || resp.Deleted != 1 {
					t.Fatalf("delete %d: %d deleted, %v", i, resp.Deleted, err)
				}
				rev = resp.Header.Revision
			}
			if rev != 0 {
				if _, err := c.Compact(requestContext(t), rev, clientv3.WithCompactPhysical()); err != nil {
					t.Fatalf("compact: %v", err)
				}
			}
			// Compaction frees pages inside the file but never shrinks it.
			before, _ := s.DBSize()
			if before < full {
				t.Fatalf("database shrank from %d to %d bytes without defragmentation", full, before)
			}
			c.Close() //nolint:errcheck
			s.Close()
			dbFile := filepath.Join(cfg.DataDir, "member", "snap", "db")
			onDiskBefore := fileSize(t, dbFile)

			s = start(t, cfg)
			if before, _ := s.DBSize(); before*10 < full*9 {
				t.Fatalf("database shrank from %d to %d bytes while the member started: WaitReady only waits", full, before)
			}
			if err := s.DefragmentIfFragmented(t.Context()); err != nil {
				t.Fatal(err)
			}
			after, inUse := s.DBSize()
			onDisk := fileSize(t, dbFile)
			switch {
			case tc.wantDefrag && after*keys*10 > before*int64((keys-tc.deleted)*10+keys):
				// What is left takes the share of the file its keys
				// had, give or take a tenth.
				t.Errorf("database is %d bytes after restart (%d in use), %d before: not defragmented", after, inUse, before)
			case tc.wantDefrag && onDisk >= onDiskBefore:
				t.Errorf("%s is %d bytes after restart, %d before: not defragmented", dbFile, onDisk, onDiskBefore)
			case !tc.wantDefrag && after < before:
				t.Errorf("database shrank from %d to %d bytes: defragmented although more than half was in use", before, after)
			}
			if tc.deleted == keys && after*2 >= before {
				t.Errorf("database is %d bytes after restart, want less than half of %d", after, before)
			}

			c = newClient(t, s)
			resp, err := c.Get(requestContext(t), "/bulk/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(keys - tc.deleted); resp.Count != want {
				t.Errorf("%d keys after restart, want %d", resp.Count, want)
			}
			if tc.deleted < keys {
				if v, ok := get(t, c, fmt.Sprintf("/bulk/%04d", keys-1)); !ok || v != value {
					t.Errorf("last key lost or changed after restart (present: %v, %d bytes)", ok, len(v))
				}
			}
			// The database still takes writes.
			if _, err := c.Put(requestContext(t), "/after", "restart"); err != nil {
				t.Errorf("put after restart: %v", err)
			}
		})
	}
}

// waitForDBSize polls DBSize until done accepts it and returns the size.
func waitForDBSize(t *testing.T, s *Server, done func(size, inUse int64) bool) int64 {
	t.Helper()
	var size, inUse int64
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		size, inUse = s.DBSize()
		return done(size, inUse), nil
	})
	if err != nil {
		t.Fatalf("database size %d (%d in use): %v", size, inUse, err)
	}
	return size
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
