// Package etcdtest starts embedded etcd members for tests of the packages
// built on them (snapshots, restores, maintenance).
package etcdtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// SocketPath returns a socket path in a fresh, short directory (a unix
// socket path must fit in 107 bytes, which t.TempDir() may exceed). The
// socket lives in a subdirectory "run" that Start has to create.
func SocketPath(t testing.TB) string {
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

// StartMember starts a member and waits until it is ready; it is closed
// when the test ends.
func StartMember(t testing.TB, cfg embeddedetcd.Config) *embeddedetcd.Server {
	t.Helper()
	member, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("starting the embedded etcd member: %v", err)
	}
	t.Cleanup(member.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := member.WaitReady(ctx); err != nil {
		t.Fatalf("waiting for the embedded etcd member: %v", err)
	}
	return member
}

// Client returns a client of member through its socket; it is closed when
// the test ends.
func Client(t testing.TB, member *embeddedetcd.Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{member.ClientURL()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("connecting to %s: %v", member.ClientURL(), err)
	}
	t.Cleanup(func() { c.Close() }) //nolint:errcheck // closed twice when the test closes it first
	return c
}

// RequestContext bounds one request of a test.
func RequestContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// SetStorageVersion writes v as the storage version of the database at
// path, as the etcd of that version would.
func SetStorageVersion(t testing.TB, path, v string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(schema.Meta.Name()).Put(schema.MetaStorageVersionName, []byte(v))
	})
	if closeErr := db.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// WriteFiles writes files, by their paths under dir, with their content.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
