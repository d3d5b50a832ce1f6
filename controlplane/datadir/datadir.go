// Package datadir manages a control plane's data directory: the lock that
// keeps a second process out, the PKI in pki/, admin.kubeconfig, the
// embedded etcd member in etcd/ with its client socket, and the member's
// snapshots (scheduled ones in snapshots/, and restores into etcd/).
//
// Prepare takes the directory for this process and returns a handle whose
// Close gives it back; everything else reads or writes inside a prepared
// directory, or, for the snapshot commands, one no control plane holds.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

const (
	// maxUnixSocketPath is what a sockaddr_un holds on Linux, less the NUL.
	maxUnixSocketPath = 107

	kubeconfigName = "admin.kubeconfig"
	pkiDirName     = "pki"
	// etcdSocketRelPath is the embedded member's client socket, unless the
	// data dir's path is too long for it (etcdSocketPath).
	etcdSocketRelPath = "run/etcd.sock"
)

// Settings say what Prepare prepares.
type Settings struct {
	// ServingHosts are the DNS names and IPs the serving certificate is
	// issued for.
	ServingHosts []string
	// EmbeddedEtcd chooses a client socket for an embedded etcd member.
	EmbeddedEtcd bool
}

// Dir is a prepared data directory, held by this process until Close.
type Dir struct {
	// Path is the directory's absolute path.
	Path string
	// PKI are the credentials under pki/; nil until EnsurePKI.
	PKI *pki.PKI
	// EtcdSocket is where the embedded etcd member serves its clients;
	// empty until ChooseEtcdSocket, and for an external etcd.
	EtcdSocket string

	lock *lock
	// membership is etcd-member.json once read (Membership).
	membership     *embeddedetcd.Membership
	membershipRead bool
	// cleanups run at Close, e.g. removing a socket dir outside the data dir.
	cleanups []func()
}

// Prepare creates the data dir at path (mode 0700) unless it exists, locks
// it, creates or loads the PKI and chooses the embedded etcd's socket: Lock,
// EnsurePKI and ChooseEtcdSocket in one, for a server that places nothing
// of its own in between (a server joining a cluster places the cluster's
// credentials before the PKI is completed). It fails at once, naming the
// process, when another control plane holds the directory.
func Prepare(path string, s Settings) (*Dir, error) {
	d, err := Lock(path)
	if err != nil {
		return nil, err
	}
	if err := d.EnsurePKI(pki.Hosts{Serving: s.ServingHosts}); err != nil {
		d.Close()
		return nil, err
	}
	if s.EmbeddedEtcd {
		if err := d.ChooseEtcdSocket(); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// Lock creates the data dir at path (mode 0700) unless it exists and locks
// it. It fails at once, naming the process, when another control plane
// holds it. Close the returned Dir to unlock it.
func Lock(path string) (*Dir, error) {
	if path == "" {
		return nil, errors.New("--data-dir must not be empty; write e.g. --data-dir=$HOME/.local/share/sample-generic-controlplane")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", path, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("--data-dir %s cannot be created (%v); choose a writable directory", abs, unwrapPathError(err))
	}
	l, err := lockDataDir(abs)
	if err != nil {
		return nil, err
	}
	return &Dir{Path: abs, lock: l}, nil
}

// PKIDir is where the credentials are kept.
func (d *Dir) PKIDir() string { return filepath.Join(d.Path, pkiDirName) }

// EnsurePKI creates or loads the credentials under pki/ for hosts.
func (d *Dir) EnsurePKI(hosts pki.Hosts) error {
	p, err := pki.Ensure(d.PKIDir(), hosts)
	if err != nil {
		return fmt.Errorf("preparing certificates in %s: %w", d.Path, err)
	}
	d.PKI = p
	return nil
}

// ChooseEtcdSocket chooses where the embedded etcd member serves its
// clients (EtcdSocket).
func (d *Dir) ChooseEtcdSocket() error {
	socket, cleanup, err := etcdSocketPath(d.Path)
	if err != nil {
		return err
	}
	if cleanup != nil {
		d.cleanups = append(d.cleanups, cleanup)
	}
	d.EtcdSocket = socket
	return nil
}

// HasEtcdMember reports whether the data dir holds an embedded etcd
// member's data.
func (d *Dir) HasEtcdMember() (bool, error) {
	return exists(filepath.Join(d.Path, etcdDirName, "member"))
}

// Close gives the data dir back: it removes what Prepare made outside it
// and unlocks it. Stop the embedded etcd member
// first. It is safe to call more than once.
func (d *Dir) Close() {
	for _, cleanup := range slices.Backward(d.cleanups) {
		cleanup()
	}
	d.cleanups = nil
	d.lock.release()
}

// KubeconfigPath is where the admin kubeconfig is kept.
func (d *Dir) KubeconfigPath() string {
	return filepath.Join(d.Path, kubeconfigName)
}

// etcdSocketPath places the embedded etcd's socket in <data-dir>/run, or, when
// that path is too long for a unix socket, in a private temporary directory
// that the returned cleanup removes.
func etcdSocketPath(dataDir string) (string, func(), error) {
	socket := filepath.Join(dataDir, etcdSocketRelPath)
	if len(socket) <= maxUnixSocketPath {
		return socket, nil, nil
	}
	// $TMPDIR may itself be long; /tmp is short everywhere we run.
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		dir, err := os.MkdirTemp(parent, "sgcp-etcd-")
		if err != nil {
			return "", nil, fmt.Errorf("creating a directory for the etcd socket: %w", err)
		}
		socket := filepath.Join(dir, "etcd.sock")
		if len(socket) <= maxUnixSocketPath {
			return socket, func() { os.RemoveAll(dir) }, nil //nolint:errcheck // best effort
		}
		os.RemoveAll(dir) //nolint:errcheck
	}
	return "", nil, fmt.Errorf("--data-dir %s is too long for the embedded etcd's unix socket (at most %d bytes with /run/etcd.sock) and no short temporary directory is available; choose a shorter --data-dir", dataDir, maxUnixSocketPath)
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
