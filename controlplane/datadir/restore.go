package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

const (
	// etcdDirName is the embedded member's directory in the data dir.
	etcdDirName = "etcd"
	// replacedEtcdPrefix starts the name of the member data a restore
	// replaced, kept until the restored member has started once.
	replacedEtcdPrefix = "etcd.pre-restore-"
	// restoringEtcdPrefix starts the name of the member a restore is
	// writing; one is left behind only by a restore that was killed.
	restoringEtcdPrefix = "etcd.restoring-"
)

// RestoreResult is what RestoreSnapshot did.
type RestoreResult struct {
	// Snapshot is the restored snapshot.
	Snapshot snapshot.Status
	// EtcdDir is the restored member: <data-dir>/etcd.
	EtcdDir string
	// ReplacedDir holds the member data the restore replaced, until the
	// control plane has started on the restored member; empty when the data
	// dir had none.
	ReplacedDir string
}

// restoreFunc writes a member restored from a snapshot into an empty dir.
type restoreFunc func(file, dir string) (snapshot.Status, error)

// RestoreSnapshot replaces the embedded etcd member of the control plane on
// dataDir with one restored from snapshot (see snapshot.RestoreMember),
// and keeps the PKI and kubeconfig. It holds the data dir's lock while it
// works, so it refuses while a control plane runs there, and a control
// plane cannot start in the middle of it. ctx bounds the question to the
// member's peers, for a member of a cluster.
//
// The replaced member data is moved aside (RestoreResult.ReplacedDir); the
// next start removes it once the restored member is ready. When the restore
// fails, the data dir is left as it was.
func RestoreSnapshot(ctx context.Context, dataDir, file string) (*RestoreResult, error) {
	return restoreSnapshot(ctx, dataDir, file, snapshot.RestoreMember, time.Now())
}

func restoreSnapshot(ctx context.Context, dataDir, file string, restore restoreFunc, now time.Time) (*RestoreResult, error) {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", dataDir, err)
	}
	if file, err = filepath.Abs(file); err != nil {
		return nil, fmt.Errorf("snapshot %q: %w", file, err)
	}
	// Before anything is created or locked: a typo in the file name should
	// leave no trace.
	info, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("snapshot %s does not exist; name a file that \"snapshot save\" wrote or that \"snapshot list\" shows", file)
	case err != nil:
		return nil, fmt.Errorf("snapshot %s: %w", file, err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("snapshot %s is not a file; name a file that \"snapshot save\" wrote or that \"snapshot list\" shows", file)
	}

	// A data dir on a new machine, say: the restore creates it, and removes
	// it again when it fails.
	created := false
	if _, err := os.Stat(dataDir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("--data-dir %s cannot be created (%v); choose a writable directory", dataDir, unwrapPathError(err))
		}
		created = true
	}
	lock, err := lockDataDir(dataDir)
	var inUse *dataDirInUseError
	if errors.As(err, &inUse) {
		return nil, fmt.Errorf("cannot restore while a control plane runs: data dir %s is in use by sample-generic-controlplane pid %s (lock %s); stop it, then run the restore again", inUse.dir, inUse.pid, inUse.lock)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot restore: %w", err)
	}
	defer lock.release()
	result, err := restoreLocked(ctx, dataDir, file, restore, now)
	if err != nil && created {
		// Under the lock: a control plane that starts meanwhile fails
		// to take it, rather than finding its data dir removed.
		os.RemoveAll(dataDir) //nolint:errcheck // best effort; it held nothing before
	}
	return result, err
}

func restoreLocked(ctx context.Context, dataDir, file string, restore restoreFunc, now time.Time) (*RestoreResult, error) {
	etcdDir := filepath.Join(dataDir, etcdDirName)
	hasMember, err := exists(etcdDir)
	if err != nil {
		return nil, err
	}
	if !hasMember {
		// The PKI is created at the first start, the member right after
		// it: a data dir with one and not the other belongs to a control
		// plane that runs on an external etcd cluster, unless a restore
		// was interrupted there, which this one completes.
		left, err := restoreLeftovers(dataDir)
		if err != nil {
			return nil, err
		}
		if hasPKI, err := exists(filepath.Join(dataDir, "pki")); err != nil {
			return nil, err
		} else if hasPKI && len(left) == 0 {
			return nil, fmt.Errorf("data dir %s has no embedded etcd member (no %s): its control plane uses --etcd-servers, and its objects are in that etcd cluster. Restore the cluster's members with etcdutl snapshot restore (see etcd's disaster recovery guide), then start the control plane again", dataDir, etcdDir)
		}
	}

	membership, err := embeddedetcd.ReadMembership(dataDir)
	if err != nil {
		return nil, err
	}
	if hasMember && membership != nil {
		if err := refuseWhilePeersRun(ctx, dataDir, membership); err != nil {
			return nil, err
		}
	}

	// The new member is written beside the old one, on the same file
	// system, so that putting it in place is a rename.
	tmp, err := os.MkdirTemp(dataDir, restoringEtcdPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating a directory for the restored member in %s: %w", dataDir, err)
	}
	status, err := restore(file, tmp)
	if err != nil {
		os.RemoveAll(tmp) //nolint:errcheck // best effort; the next start removes it too
		return nil, err
	}

	result := &RestoreResult{Snapshot: status, EtcdDir: etcdDir}
	if hasMember {
		if result.ReplacedDir, err = moveAside(etcdDir, now); err != nil {
			os.RemoveAll(tmp) //nolint:errcheck // as above
			return nil, err
		}
	}
	if err := os.Rename(tmp, etcdDir); err != nil {
		err = fmt.Errorf("moving the restored member into place: %w", err)
		if result.ReplacedDir != "" {
			if backErr := os.Rename(result.ReplacedDir, etcdDir); backErr != nil {
				return nil, fmt.Errorf("%w; and moving the old member back failed too (%v): move %s back to %s yourself", err, backErr, result.ReplacedDir, etcdDir)
			}
		}
		os.RemoveAll(tmp) //nolint:errcheck // as above
		return nil, err
	}
	if err := snapshot.SyncDir(dataDir); err != nil {
		return nil, err
	}
	if membership != nil && membership.InitialCluster != "" {
		// The restored member is alone in a new cluster: it still listens
		// for peers, which join it again.
		membership.InitialCluster = ""
		if err := embeddedetcd.WriteMembership(dataDir, *membership); err != nil {
			return nil, err
		}
	}
	return result, nil
}

// refuseWhilePeersRun refuses to restore a member of a cluster while other
// members of the cluster run: they would go on as the old cluster, with a
// quorum of their own, beside the restored one. Stopped, they refuse to
// start again until they have joined the restored server (the check of
// embeddedetcd's start).
func refuseWhilePeersRun(ctx context.Context, dataDir string, m *embeddedetcd.Membership) error {
	creds := pki.Paths(filepath.Join(dataDir, pkiDirName))
	live, err := embeddedetcd.LivePeers(ctx, embeddedetcd.Config{
		DataDir:           filepath.Join(dataDir, etcdDirName),
		Name:              m.Name,
		PeerURL:           m.PeerURL,
		PeerCertFile:      creds.EtcdPeerCertFile,
		PeerKeyFile:       creds.EtcdPeerKeyFile,
		PeerTrustedCAFile: pki.EtcdCAFile(creds.Dir),
	})
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return fmt.Errorf("cannot restore while other members of this server's cluster run (%s): they would go on as the old cluster beside the restored one. Stop their servers first; after the restore this server is a cluster of its own, and they refuse to start until they join it again (move their data dir aside, start with --join and a token)", strings.Join(live, ", "))
	}
	return nil
}

// moveAside renames the member data etcdDir to etcd.pre-restore-<now>,
// with a suffix should a restore in the same second have taken that name.
func moveAside(etcdDir string, now time.Time) (string, error) {
	base := filepath.Join(filepath.Dir(etcdDir), replacedEtcdPrefix+now.UTC().Format(snapshot.FileTimeFormat))
	for i := 1; ; i++ {
		aside := base
		if i > 1 {
			aside = fmt.Sprintf("%s-%d", base, i)
		}
		taken, err := exists(aside)
		if err != nil {
			return "", err
		}
		if taken {
			continue
		}
		if err := os.Rename(etcdDir, aside); err != nil {
			return "", fmt.Errorf("moving the old member %s aside: %w", etcdDir, err)
		}
		return aside, nil
	}
}

// restoreLeftovers returns the directories a snapshot restore left in
// dataDir: the member data it replaced (etcd.pre-restore-*) and a member it
// was writing (etcd.restoring-*).
func restoreLeftovers(dataDir string) ([]string, error) {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dataDir, unwrapPathError(err))
	}
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), replacedEtcdPrefix) || strings.HasPrefix(e.Name(), restoringEtcdPrefix) {
			left = append(left, filepath.Join(dataDir, e.Name()))
		}
	}
	return left, nil
}

// checkNoInterruptedRestore fails when a snapshot restore was interrupted
// (killed, or the machine lost power) after it moved the old member aside
// and before it moved the restored one into place. etcd would start a new,
// empty member there, and the start would then remove both the old member
// and the restored one as leftovers; so the start stops, says what happened
// and leaves everything as it is.
func checkNoInterruptedRestore(dataDir string) error {
	hasMember, err := exists(filepath.Join(dataDir, etcdDirName))
	if err != nil || hasMember {
		return err
	}
	left, err := restoreLeftovers(dataDir)
	if err != nil || len(left) == 0 {
		return err
	}
	return fmt.Errorf("data dir %s has no etcd member (%s) but holds %s: a snapshot restore was interrupted before it put the restored member in place. Run \"snapshot restore\" again, or move the member you want back into place (mv DIR %s); nothing was changed",
		dataDir, filepath.Join(dataDir, etcdDirName), strings.Join(left, " and "), filepath.Join(dataDir, etcdDirName))
}

// removeReplacedEtcdData removes the member data that restores replaced,
// now that the restored member has started, and what a killed restore left
// behind. A failure is logged: the control plane runs without the space.
func removeReplacedEtcdData(logger klog.Logger, dataDir string) {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		logger.Error(err, "Cannot look for what a snapshot restore left behind")
		return
	}
	for _, entry := range entries {
		var message string
		switch name := entry.Name(); {
		case strings.HasPrefix(name, replacedEtcdPrefix):
			message = "Removed the etcd data that a snapshot restore replaced, now that the restored member has started"
		case strings.HasPrefix(name, restoringEtcdPrefix):
			message = "Removed what an interrupted snapshot restore left behind"
		default:
			continue
		}
		path := filepath.Join(dataDir, entry.Name())
		if err := os.RemoveAll(path); err != nil {
			logger.Error(err, "Cannot remove what a snapshot restore left behind; remove it yourself", "path", path)
			continue
		}
		logger.Info(message, "path", path)
	}
}

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, unwrapPathError(err)
	}
	return true, nil
}
