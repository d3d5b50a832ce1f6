package embeddedetcd_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdtest"
)

// A data dir that a newer etcd wrote (after an upgrade to a later release)
// is refused before etcd opens it: the error says what to do, and the
// database is left byte for byte as it was, so the newer release can still
// start on it.
func TestStartRefusesNewerStorageVersion(t *testing.T) {
	for _, stored := range []string{"3.8.0", "4.0.0"} {
		t.Run(stored, func(t *testing.T) {
			cfg := embeddedetcd.Config{DataDir: filepath.Join(t.TempDir(), "etcd"), SocketPath: etcdtest.SocketPath(t)}
			etcdtest.StartMember(t, cfg).Close()
			db := filepath.Join(cfg.DataDir, "member", "snap", "db")
			etcdtest.SetStorageVersion(t, db, stored)
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}

			s, err := embeddedetcd.Start(t.Context(), cfg)
			if err == nil {
				s.Close()
				t.Fatalf("Start on a data dir with storage version %s succeeded; want it refused", stored)
			}
			if !errors.Is(err, embeddedetcd.ErrNewerStorageVersion) {
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
