package embeddedetcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

// MembershipFile is the file in a control plane's data dir that makes its
// embedded member one of a cluster of servers.
const MembershipFile = "etcd-member.json"

// Membership is the embedded member's place in a cluster of servers, kept
// in <data-dir>/etcd-member.json. A data dir without it holds a member
// that runs alone, listening for no peers. Its fields are the member's
// identity in Config.
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

// ReadMembership returns the membership kept in dataDir, or nil when its
// member runs alone.
func ReadMembership(dataDir string) (*Membership, error) {
	path := filepath.Join(dataDir, MembershipFile)
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

// WriteMembership keeps m in dataDir, synced to disk.
func WriteMembership(dataDir string, m Membership) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dataDir, MembershipFile), append(data, '\n'), 0o600)
}
