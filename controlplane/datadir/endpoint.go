package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// EmbeddedEtcdEndpoint is the client URL of the embedded etcd member of the
// control plane that runs on dataDir. It fails, saying what to do, when
// none runs there.
func EmbeddedEtcdEndpoint(dataDir string) (string, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("--data-dir %q: %w", dataDir, err)
	}
	if err := checkOurs(dataDir); err != nil {
		return "", err
	}
	socket := filepath.Join(dataDir, etcdSocketRelPath)
	if len(socket) > maxUnixSocketPath {
		// See etcdSocketPath: the member's socket is then in a private
		// temporary directory that only the control plane knows.
		return "", fmt.Errorf("--data-dir %s is too long for the embedded etcd's unix socket, so the control plane keeps it where no other process finds it: rely on its scheduled snapshots (--embedded-etcd-snapshot-schedule), or choose a data dir path of at most %d bytes", dataDir, maxUnixSocketPath-len("/run/etcd.sock"))
	}
	conn, err := net.DialTimeout("unix", socket, 5*time.Second)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return "", fmt.Errorf("no control plane with an embedded etcd runs on data dir %s (nothing listens on %s): start it, or, for a control plane that uses an external etcd, pass --etcd-servers (with --etcd-cafile, --etcd-certfile and --etcd-keyfile)", dataDir, socket)
	}
	if err != nil {
		return "", fmt.Errorf("connecting to the embedded etcd of data dir %s: %w", dataDir, err)
	}
	conn.Close() //nolint:errcheck // only a probe
	return "unix://" + socket, nil
}

// checkOurs fails, saying what to check, unless dataDir is the data dir of
// a control plane with an embedded etcd member: one that holds the pki/
// and etcd/ its first start created.
func checkOurs(dataDir string) error {
	info, err := os.Stat(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s does not exist: check --data-dir", dataDir)
	}
	if err != nil {
		return fmt.Errorf("--data-dir: %w", unwrapPathError(err))
	}
	if !info.IsDir() {
		return fmt.Errorf("--data-dir %s is not a directory", dataDir)
	}
	hasPKI, err := exists(filepath.Join(dataDir, pkiDirName))
	if err != nil {
		return err
	}
	hasEtcd, err := exists(filepath.Join(dataDir, etcdDirName))
	if err != nil {
		return err
	}
	switch {
	case !hasPKI && !hasEtcd:
		return fmt.Errorf("%s is not the data dir of a control plane: it holds no pki/ and no etcd/, which the control plane creates at its first start; check --data-dir", dataDir)
	case !hasEtcd:
		return fmt.Errorf("the control plane of data dir %s has no embedded etcd member (no etcd/ in it): it uses an external etcd; pass --etcd-servers (with --etcd-cafile, --etcd-certfile and --etcd-keyfile)", dataDir)
	}
	return nil
}
