package snapshot

import (
	"fmt"

	"github.com/coreos/go-semver/semver"
	"go.etcd.io/etcd/api/v3/version"
	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// RestoreRevisionBump is how far a restored member's revision is moved past
// the snapshot's. The API server's clients (informers, watches, anything
// that kept a resourceVersion) saw revisions up to the moment of the
// restore, which may be far past the snapshot's; if revisions started again
// from the snapshot's, new writes would get resourceVersions those clients
// have seen already, for other objects. One billion is far more writes
// than a control plane makes between a snapshot and its restore, and
// leaves room for billions of restores before the revision overflows.
const RestoreRevisionBump = 1_000_000_000

// RestoreMember writes a new data dir for the embedded member at dataDir,
// which must not exist or be empty, from the snapshot at path, whose hash
// must verify. The member has the name, peer URL and cluster token that
// Start gives it, so that Start restarts it as it would the member the
// snapshot came from.
//
// As etcdutl's "snapshot restore --bump-revision --mark-compacted" does, the
// revision continues RestoreRevisionBump past the snapshot's, and every
// revision up to there is marked compacted: a client that watches from a
// resourceVersion it saw before the restore is told that it is too old and
// lists again, rather than waiting for revisions that will never come or
// missing the changes the restore made.
//
// On error, dataDir may hold part of a member; the caller removes it.
func RestoreMember(path, dataDir string) (Status, error) {
	// etcdutl verifies the hash too, but says only "expected sha256 […]".
	status, err := Verify(path)
	if err != nil {
		return Status{}, err
	}
	// Start would refuse the member; say so before writing it.
	if stored, err := semver.NewVersion(status.StorageVersion); err == nil && embeddedetcd.NewerThanOurs(stored) {
		return Status{}, fmt.Errorf("%w: snapshot %s has etcd storage version %d.%d, and this binary runs etcd %s, which cannot read it. Restore it with the release that took it",
			embeddedetcd.ErrNewerStorageVersion, path, stored.Major, stored.Minor, version.Version)
	}
	// The restored member is alone in a new cluster, whatever cluster the
	// snapshot came from. Its cluster token, new as every new cluster's
	// (embeddedetcd.Config.MemberConfig), gives the cluster and the member IDs no other has, so
	// that members of the old cluster, which share its peer CA, are refused
	// as strangers rather than taken for peers (etcd derives both IDs from
	// the token).
	member, err := embeddedetcd.Config{}.MemberConfig()
	if err != nil {
		return Status{}, err
	}
	var peerURLs []string
	for _, u := range member.AdvertisePeerUrls {
		peerURLs = append(peerURLs, u.String())
	}
	err = etcdutlsnapshot.NewV3(zap.NewNop()).Restore(etcdutlsnapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                member.Name,
		OutputDataDir:       dataDir,
		PeerURLs:            peerURLs,
		InitialCluster:      member.InitialCluster,
		InitialClusterToken: member.InitialClusterToken,
		RevisionBump:        RestoreRevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return Status{}, fmt.Errorf("restoring snapshot %s into %s: %w", path, dataDir, err)
	}
	return status, nil
}
