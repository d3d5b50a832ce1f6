package datadir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/internal/atomicfile"
)

const (
	// membershipName is the file that makes the embedded member one of a
	// cluster of servers.
	membershipName = "etcd-member.json"
	// encryptionConfigName is the cluster's encryption configuration, on
	// a server that joined a cluster that has one.
	encryptionConfigName = "encryption-config.yaml"
)

// Membership is the embedded etcd member's place in a cluster of servers,
// kept in <data-dir>/etcd-member.json. A data dir without it holds a
// member that runs alone, listening for no peers.
type Membership struct {
	// Name is the member's name in the cluster.
	Name string `json:"name"`
	// PeerURL is where its peers reach it: https://ADDRESS:PORT.
	PeerURL string `json:"peerURL"`
	// InitialCluster lists the cluster's members as they were when this
	// one joined (etcd's --initial-cluster), for the member's first start;
	// empty for the server that initialised the cluster.
	InitialCluster string `json:"initialCluster,omitempty"`
}

// Membership returns the member's place in a cluster, or nil when it runs
// alone. The file is read once: while the Dir holds the lock, only
// SetMembership writes it.
func (d *Dir) Membership() (*Membership, error) {
	if !d.membershipRead {
		m, err := readMembership(d.Path)
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
func (d *Dir) SetMembership(m Membership) error {
	if err := writeMembership(d.Path, m); err != nil {
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

func readMembership(dataDir string) (*Membership, error) {
	path := filepath.Join(dataDir, membershipName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var m Membership
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): restore it from a backup, or remove the data dir and join the cluster again", path, err)
	}
	if m.Name == "" || m.PeerURL == "" {
		return nil, fmt.Errorf("%s names no member or peer URL: restore it from a backup, or remove the data dir and join the cluster again", path)
	}
	return &m, nil
}

func writeMembership(dataDir string, m Membership) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dataDir, membershipName), append(data, '\n'), 0o600)
}
