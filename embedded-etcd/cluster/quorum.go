package cluster

import (
	"errors"
	"fmt"
	"strings"
)

// errLastVoter refuses the removal of the last voter, even with --force:
// etcd would refuse it too.
var errLastVoter = errors.New("the last voter")

// checkQuorum refuses the removal of target when the voters that remain
// would not have a quorum (a majority) of healthy voters among them, or when
// target is the last voter (errLastVoter, which --force does not skip). A learner does not vote, so removing one is
// always safe.
//
// etcd checks too (--strict-reconfig-check, on by default), but by its own
// peer connections, which say nothing of the control plane beside a member:
// a member whose server stopped reporting counts as unhealthy here. --force
// skips this check, not etcd's.
func checkQuorum(members []MemberStatus, target MemberStatus) error {
	if target.Learner {
		return nil
	}
	var remaining, healthy int
	var unhealthy []string
	for _, m := range members {
		if m.Learner || m.ID == target.ID {
			continue
		}
		remaining++
		if m.Healthy {
			healthy++
		} else {
			unhealthy = append(unhealthy, displayName(m))
		}
	}
	if remaining == 0 {
		return fmt.Errorf("member %s is the last voter: etcd cannot remove it (to stop the cluster, stop its server): %w: %w", displayName(target), errLastVoter, ErrQuorum)
	}
	quorum := remaining/2 + 1
	if healthy >= quorum {
		return nil
	}
	return fmt.Errorf("removing member %s would leave %d voters of which %d are healthy, fewer than the %d a quorum needs (unhealthy: %s): "+
		"bring those members back or remove them first, or pass --force to remove %s anyway: %w",
		displayName(target), remaining, healthy, quorum, strings.Join(unhealthy, ", "), displayName(target), ErrQuorum)
}

// displayName is the member's name, or its ID while it has none.
func displayName(m MemberStatus) string {
	if m.Name == "" {
		return m.ID
	}
	return m.Name
}
