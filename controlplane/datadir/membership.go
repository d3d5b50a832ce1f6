package datadir

import (
	"os"
	"path/filepath"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

// encryptionConfigName is the cluster's encryption configuration, on a
// server that joined a cluster that has one.
const encryptionConfigName = "encryption-config.yaml"

// Membership returns the embedded member's place in a cluster
// (embeddedetcd.ReadMembership), or nil when it runs alone. The file is
// read once: while the Dir holds the lock, only SetMembership writes it.
func (d *Dir) Membership() (*embeddedetcd.Membership, error) {
	if !d.membershipRead {
		m, err := embeddedetcd.ReadMembership(d.Path)
		if err != nil {
			return nil, err
		}
		d.membership, d.membershipRead = m, true
	}
	if d.membership == nil {
		return nil, nil
	}
	m := *d.membership
	return &m, nil
}

// SetMembership records the member's place in a cluster, synced to disk.
func (d *Dir) SetMembership(m embeddedetcd.Membership) error {
	if err := embeddedetcd.WriteMembership(d.Path, m); err != nil {
		return err
	}
	d.membership, d.membershipRead = &m, true
	return nil
}

// EncryptionConfig is the path of the encryption configuration the
// server received when it joined its cluster; empty when it has none.
func (d *Dir) EncryptionConfig() string {
	path := filepath.Join(d.Path, encryptionConfigName)
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return ""
	}
	return path
}

// SetEncryptionConfig keeps the cluster's encryption configuration, synced
// to disk, readable by the owner alone.
func (d *Dir) SetEncryptionConfig(data []byte) error {
	return atomicfile.Write(filepath.Join(d.Path, encryptionConfigName), data, 0o600)
}
