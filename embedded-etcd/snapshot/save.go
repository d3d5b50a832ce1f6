// Package snapshot saves, verifies and restores snapshots of an etcd
// member: one taken by hand (Save, from the embedded member or a member of
// an external cluster), the scheduled ones of the embedded member and their
// retention (Scheduler), and a member restored from one (RestoreMember),
// which the control plane's data dir puts in place of its member under its
// lock (datadir.RestoreSnapshot).
package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
)

// snapshotConnectTimeout bounds the wait for the member to answer before a
// snapshot: the snapshot stream itself retries an unreachable endpoint
// without end.
const snapshotConnectTimeout = 5 * time.Second

// ErrHash is returned by Verify for a file whose content
// does not match the sha256 hash etcd appended to it, or that has none.
var ErrHash = errors.New("snapshot hash does not verify")

// Source is the etcd member a snapshot is taken from: one member,
// since a snapshot is the point-in-time state of the member that sends it.
type Source struct {
	// Endpoint is the member's client URL: unix:///…/etcd.sock for the
	// embedded member, https://host:2379 for a member of an external cluster.
	Endpoint string
	// CAFile, CertFile and KeyFile secure an https endpoint, as the
	// control plane's --etcd-cafile, --etcd-certfile and --etcd-keyfile do.
	CAFile, CertFile, KeyFile string
}

// Status describes a snapshot file whose hash verified.
type Status struct {
	// Revision is the etcd revision the snapshot was taken at: it holds
	// every write up to and including it.
	Revision int64
	// Keys is how many keys it holds.
	Keys int
	// Size is the size of the file in bytes.
	Size int64
	// StorageVersion is the etcd storage version of its database, e.g.
	// "3.7.0"; empty for a snapshot of etcd 3.5 or earlier.
	StorageVersion string
}

// Save streams a snapshot from source into a temporary file in dir,
// syncs it to disk and verifies its hash, and only then renames it into
// place, as dir/name(status), replacing a file of that name. A snapshot
// that fails leaves nothing behind, and a file of that name as it was.
func Save(ctx context.Context, source Source, dir string, name func(Status) string) (string, Status, error) {
	cfg, err := source.clientConfig()
	if err != nil {
		return "", Status{}, err
	}
	if err := checkReachable(ctx, cfg); err != nil {
		return "", Status{}, err
	}

	// A hidden name that "snapshot list" and retention never take for a
	// snapshot. The file is created here so that two snapshots at once
	// cannot choose the same one.
	tmp, err := os.CreateTemp(dir, ".snapshot-*.tmp")
	if err != nil {
		return "", Status{}, fmt.Errorf("creating a temporary file for the snapshot: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath) //nolint:errcheck // gone once renamed into place

	// Empty: SaveWithVersion replaces it.
	tmp.Close() //nolint:errcheck

	// SaveWithVersion writes tmpPath.part, syncs it and renames it to
	// tmpPath. Its own log says what the returned error says.
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, tmpPath); err != nil {
		return "", Status{}, fmt.Errorf("taking a snapshot from %s: %w", source.Endpoint, err)
	}
	status, err := Verify(tmpPath)
	if err != nil {
		return "", Status{}, fmt.Errorf("the snapshot taken from %s: %w", source.Endpoint, err)
	}
	path := filepath.Join(dir, name(status))
	if err := os.Rename(tmpPath, path); err != nil {
		return "", Status{}, fmt.Errorf("moving the snapshot into place: %w", err)
	}
	// The rename is durable once the directory is synced.
	if err := SyncDir(dir); err != nil {
		return "", Status{}, err
	}
	return path, status, nil
}

func (s Source) clientConfig() (clientv3.Config, error) {
	return etcdclient.Config([]string{s.Endpoint}, s.CAFile, s.CertFile, s.KeyFile)
}

// checkReachable asks the member for its status, so that an endpoint that
// does not answer (or refuses the credentials) fails within
// snapshotConnectTimeout, with the endpoint named.
func checkReachable(ctx context.Context, cfg clientv3.Config) error {
	client, err := etcdclient.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	return client.Close()
}

// Verify checks the sha256 hash that etcd appends to a snapshot
// against the file's content, then reads the database: its revision and
// keys. A snapshot taken with etcdctl or "sample-generic-controlplane
// snapshot save" has the hash; a copy of a member's database file has none
// and fails. (etcdutl's snapshot status reads the database but does not
// check the hash; its restore does.)
func Verify(path string) (Status, error) {
	if err := verifyHash(path); err != nil {
		return Status{}, err
	}
	st, err := etcdutlsnapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return Status{}, fmt.Errorf("reading snapshot %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return Status{}, err
	}
	return Status{Revision: st.Revision, Keys: st.TotalKey, Size: info.Size(), StorageVersion: st.Version}, nil
}

func verifyHash(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // read-only
	info, err := f.Stat()
	if err != nil {
		return err
	}
	// etcd appends the hash to a database of whole pages, so the hash is
	// there when the size is a multiple of 512 plus its length (the test
	// etcdutl applies).
	size := info.Size()
	if size%512 != sha256.Size {
		return fmt.Errorf("%w: %s has no sha256 hash at its end (size %d): it is truncated, or not a snapshot taken from a running etcd", ErrHash, path, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%w: the content of %s does not match the sha256 hash at its end: the file is damaged", ErrHash, path)
	}
	return nil
}

// SyncDir makes renames and removals in dir durable.
func SyncDir(dir string) error {
	d, err := fileutil.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close() //nolint:errcheck // synced below
	if err := fileutil.Fsync(d); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
