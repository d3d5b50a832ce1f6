package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// EtcdConfig is the embedded etcd member of the data dir, as
// embeddedetcd.Start takes it: its data in etcd/, the socket
// ChooseEtcdSocket chose, the data dir's peer certificates and, for a member
// of a cluster of servers, its Membership. The caller adds its tuning
// (quota, log level, timeouts). It refuses a data dir whose snapshot restore
// was interrupted: etcd would start an empty member there.
func (d *Dir) EtcdConfig() (embeddedetcd.Config, error) {
	if d.EtcdSocket == "" {
		return embeddedetcd.Config{}, errors.New("the data dir was prepared for an external etcd (no ChooseEtcdSocket)")
	}
	if d.PKI == nil {
		return embeddedetcd.Config{}, errors.New("the data dir has no PKI yet (EnsurePKI): the member needs its peer certificates")
	}
	if err := checkNoInterruptedRestore(d.Path); err != nil {
		return embeddedetcd.Config{}, err
	}
	membership, err := d.Membership()
	if err != nil {
		return embeddedetcd.Config{}, err
	}
	cfg := embeddedetcd.Config{
		DataDir:           filepath.Join(d.Path, etcdDirName),
		SocketPath:        d.EtcdSocket,
		PeerCertFile:      d.PKI.EtcdPeerCertFile,
		PeerKeyFile:       d.PKI.EtcdPeerKeyFile,
		PeerTrustedCAFile: d.PKI.EtcdCA.CertFile,
	}
	if membership != nil {
		cfg.Name, cfg.PeerURL, cfg.InitialCluster = membership.Name, membership.PeerURL, membership.InitialCluster
	}
	return cfg, nil
}

// RemoveReplacedEtcdData removes the member data a snapshot restore
// replaced, and what a killed restore left behind. Call it once the
// restored member is ready, not before: should it not start, the data it
// replaced is still there to go back to. A failure is logged: the control
// plane runs without the space.
func (d *Dir) RemoveReplacedEtcdData(logger klog.Logger) {
	removeReplacedEtcdData(logger, d.Path)
}

// RemoveEtcdMember removes the embedded member's data (etcd/) and its
// membership: what a join placed here, taken back when the start that
// joined failed. The PKI stays, the cluster's, so that the server can join
// the same cluster again. Close the member first.
func (d *Dir) RemoveEtcdMember() error {
	if err := os.RemoveAll(filepath.Join(d.Path, etcdDirName)); err != nil {
		return fmt.Errorf("removing the etcd member's data: %w", err)
	}
	if err := os.Remove(filepath.Join(d.Path, embeddedetcd.MembershipFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the etcd member's membership: %w", err)
	}
	d.membership, d.membershipRead = nil, true
	return nil
}
