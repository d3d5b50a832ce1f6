package datadir

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// EtcdSettings tune the embedded etcd member.
type EtcdSettings struct {
	QuotaBackendBytes int64
	LogLevel          string
	// ClusterReadyTimeout bounds how long a member of a cluster of servers
	// waits for a quorum (and for its promotion, when it joins) before the
	// start fails; zero is embeddedetcd's default.
	ClusterReadyTimeout time.Duration
}

// StartEtcd starts the embedded etcd member of the data dir, with the data
// dir's peer certificates, the socket Prepare chose and, for a member of a
// cluster of servers, its Membership. When it returns,
// the member's data is open and its socket listens; the member elects
// itself meanwhile (Server.Ready, WaitReady). Once it is ready, the member
// data a snapshot restore replaced is removed (not before: should the
// restored member not start, the data it replaced is still there to go back
// to); ctx gives that removal its logger. It refuses a data dir whose
// restore was interrupted. Close the member before the data dir.
func (d *Dir) StartEtcd(ctx context.Context, s EtcdSettings) (*embeddedetcd.Server, error) {
	if d.EtcdSocket == "" {
		return nil, errors.New("the data dir was prepared for an external etcd (Settings.EmbeddedEtcd is false)")
	}
	if err := checkNoInterruptedRestore(d.Path); err != nil {
		return nil, err
	}
	membership, err := d.Membership()
	if err != nil {
		return nil, err
	}
	cfg := embeddedetcd.Config{
		DataDir:           filepath.Join(d.Path, etcdDirName),
		SocketPath:        d.EtcdSocket,
		PeerCertFile:      d.PKI.EtcdPeerCertFile,
		PeerKeyFile:       d.PKI.EtcdPeerKeyFile,
		PeerTrustedCAFile: d.PKI.EtcdCA.CertFile,
		QuotaBackendBytes: s.QuotaBackendBytes,
		LogLevel:          s.LogLevel,
	}
	if membership != nil {
		cfg.Name, cfg.PeerURL, cfg.InitialCluster = membership.Name, membership.PeerURL, membership.InitialCluster
		cfg.ReadyTimeout = s.ClusterReadyTimeout
	}
	member, err := embeddedetcd.Start(cfg)
	if errors.Is(err, embeddedetcd.ErrNotAMember) {
		return nil, fmt.Errorf("%w. To join the cluster again, move %s and %s aside and start with --join and a new token (\"sample-generic-controlplane token create\" on a server of the cluster)",
			err, filepath.Join(d.Path, etcdDirName), filepath.Join(d.Path, membershipName))
	}
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		select {
		case <-member.Ready():
			removeReplacedEtcdData(logger, d.Path)
		case <-member.Stopped():
		}
	}()
	return member, nil
}
