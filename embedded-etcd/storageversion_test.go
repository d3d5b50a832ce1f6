package embeddedetcd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// A data dir that a newer etcd wrote (after an upgrade to a later release)
// is refused before etcd opens it: the error says what to do, and the
// database is left byte for byte as it was, so the newer release can still
// start on it.
func TestStartRefusesNewerStorageVersion(t *testing.T) {
	for _, stored := range []string{"3.8.0", "4.0.0"} {
		t.Run(stored, func(t *testing.T) {
			cfg := Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: socketPath(t)}
			start(t, cfg).Close()
			db := filepath.Join(cfg.DataDir, "member", "snap", "db")
			setStorageVersion(t, db, stored)
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}

			s, err := Start(cfg)
			if err == nil {
				s.Close()
				t.Fatalf("Start on a data dir with storage version %s succeeded; want it refused", stored)
			}
			if !errors.Is(err, ErrNewerStorageVersion) {
				t.Errorf("Start: %v; want ErrNewerStorageVersion", err)
			}
			for _, want := range []string{cfg.DataDir, stored[:3], "Start the release that wrote it", "nothing in it was changed"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Start: %q does not say %q", err, want)
				}
			}
			after, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the refused database changed")
			}
		})
	}
}

// setStorageVersion writes v as the storage version of the database at
// path, as the etcd of that version would.
func setStorageVersion(t *testing.T, path, v string) {
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
