package embeddedetcd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coreos/go-semver/semver"
	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/storage/schema"
)

// ErrNewerStorageVersion is returned by Start for a data dir whose database a
// newer etcd wrote (after an upgrade to a later release of the control plane).
var ErrNewerStorageVersion = errors.New("data dir written by a newer etcd")

// checkStorageVersion refuses a member database whose storage version (etcd
// 3.6 and later record it) is newer than this binary's etcd, before etcd
// opens it. etcd refuses too ("version ... is not supported"), but only
// after opening the database read-write, and without saying what to do.
// A database without a storage version (new, or from etcd 3.5) is left to
// etcd.
func checkStorageVersion(dataDir string) error {
	path := filepath.Join(dataDir, "member", "snap", "db")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return fmt.Errorf("reading the storage version of %s: %w", path, err)
	}
	defer db.Close() //nolint:errcheck // read-only
	var stored *semver.Version
	err = db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(schema.Meta.Name()) != nil {
			stored = schema.ReadStorageVersionFromSnapshot(tx)
		}
		return nil
	})
	if err != nil || stored == nil {
		return err
	}
	if NewerThanOurs(stored) {
		return fmt.Errorf("%w: %s has etcd storage version %d.%d, and this binary runs etcd %s, which cannot read it. "+
			"Start the release that wrote it, or restore a copy of the data dir taken before the upgrade; nothing in it was changed",
			ErrNewerStorageVersion, dataDir, stored.Major, stored.Minor, version.Version)
	}
	return nil
}

// NewerThanOurs reports whether a database of storage version stored is
// too new for this binary's etcd to read.
func NewerThanOurs(stored *semver.Version) bool {
	ours := semver.New(version.Version)
	return stored.Major > ours.Major || stored.Major == ours.Major && stored.Minor > ours.Minor
}
