package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
)

// joinPlan is the join that this start makes (--join on a data dir without
// a member), once every local check has passed.
type joinPlan struct {
	// server is --join.
	server string
	// peerURL is where the member's peers will reach it.
	peerURL string
}

// undoJoinTimeout bounds the removal of a member whose start failed, and
// undoJoinRetry is how often it is asked again meanwhile.
const (
	undoJoinTimeout = 30 * time.Second
	undoJoinRetry   = time.Second
)

// Join has the data dir's member added to the cluster of --join: the one
// step of the start-up that changes another machine, taken after every
// local check (the options validated and completed, the port and the data
// dir taken). The cluster adds the member as a learner and uses the token:
// a token is spent when the cluster adds the member (docs/user-guide.md,
// "Join tokens"). Join returns nil when this start joins nothing: the member
// runs alone, initialised its cluster, or joined at an earlier start.
//
// Until the server is ready, a start that fails takes the member back out
// (JoinedMember.Undo).
func (c CompletedOptions) Join(ctx context.Context) (*JoinedMember, error) {
	if c.joinPlan == nil {
		return nil, nil
	}
	token, err := c.EmbeddedEtcd.Cluster.joinToken()
	if err != nil {
		return nil, err
	}
	name := cluster.NewMemberName()
	c.Notifier.Status("Joining the cluster at " + c.joinPlan.server)
	start := time.Now()
	resp, err := cluster.Join(ctx, c.joinPlan.server, token, cluster.JoinRequest{Name: name, PeerURL: c.joinPlan.peerURL})
	if err != nil {
		return nil, err
	}
	joined := &JoinedMember{server: c.joinPlan.server, memberID: resp.MemberID, name: name, dataDir: c.DataDir}
	if err := writeJoinAnswer(c.DataDir, token, resp); err != nil {
		return nil, joined.Undo(ctx, err, nil)
	}
	m := embeddedetcd.Membership{Name: name, PeerURL: c.joinPlan.peerURL, InitialCluster: resp.InitialCluster}
	if err := c.DataDir.SetMembership(m); err != nil {
		return nil, joined.Undo(ctx, err, nil)
	}
	klog.FromContext(ctx).Info("Joined the cluster as a learner; the member starts and catches up", "server", c.joinPlan.server, "member", name, "memberID", resp.MemberID, "duration", time.Since(start))
	// Joined once: the member's place is in the data dir now.
	c.Membership, c.joinPlan = &m, nil
	return joined, nil
}

// JoinedMember is the member a start added to its cluster.
type JoinedMember struct {
	// server is the one it joined through; memberID its ID, in hex.
	server, memberID, name string
	dataDir                *datadir.Dir
}

// Undo takes the member back out of its cluster after the start that
// joined it failed with cause, and returns cause with what it did. It asks
// the server it joined to remove the member, as an admin of the cluster
// (the data dir holds the cluster's CA, which issues it a client
// certificate), closes the member, etcd (nil when it never started), and
// removes the member's data and membership from the data dir, so that the
// server can join again with a new token. Undo of a nil JoinedMember returns
// cause.
func (j *JoinedMember) Undo(ctx context.Context, cause error, etcd *embeddedetcd.Server) error {
	if j == nil {
		return cause
	}
	logger := klog.FromContext(ctx)
	// The start may have failed because ctx ended (a signal): the removal
	// is still owed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoJoinTimeout)
	defer cancel()
	removeErr := j.removeFromCluster(ctx)
	if etcd != nil {
		etcd.Close()
	}
	if removeErr != nil {
		// The data dir keeps the member: started again, it rejoins its
		// peers (a learner catches up, a voter gives back the quorum it
		// may hold).
		logger.Error(removeErr, "The start failed after the join, and the member could not be taken back out; start the server again, or remove the member with \"sample-generic-controlplane cluster remove\" on a server of the cluster (a learner that never catches up is removed after --etcd-learner-timeout)", "member", j.name, "memberID", j.memberID)
		return fmt.Errorf("%w (the member %s that this start added to the cluster at %s could not be taken back out: %v; start the server again, which keeps its member, or remove it with \"sample-generic-controlplane cluster remove %s\" on a server of the cluster)", cause, j.name, j.server, removeErr, j.memberID)
	}
	if err := j.dataDir.RemoveEtcdMember(); err != nil {
		return errors.Join(cause, err)
	}
	logger.Info("The start failed after the join: took the member back out of the cluster", "member", j.name, "memberID", j.memberID, "server", j.server)
	return fmt.Errorf("%w (the member %s that this start added to the cluster at %s was taken back out; the join token is used: start again with --join and a new token)", cause, j.name, j.server)
}

// removeFromCluster asks the server the member joined to remove it, again
// while the cluster refuses for a moment (etcd removes a voter only once it
// has been connected for 5 s; the server may be busy) until ctx ends.
func (j *JoinedMember) removeFromCluster(ctx context.Context) error {
	u, err := url.Parse(j.server)
	if err != nil {
		return err
	}
	ca, err := pki.LoadCA(j.dataDir.PKIDir())
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.IssueClientCertificate(pki.AdminUser, []string{pki.AdminGroup})
	if err != nil {
		return err
	}
	members := cluster.NewMembersClient(&rest.Config{
		Host: j.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     ca.CertPEM(),
			CertData:   certPEM,
			KeyData:    keyPEM,
			ServerName: u.Hostname(),
		},
	})
	var lastErr error
	err = wait.PollUntilContextCancel(ctx, undoJoinRetry, true, func(ctx context.Context) (bool, error) {
		_, lastErr = members.Remove(ctx, j.memberID, false)
		switch {
		case lastErr == nil, apierrors.IsNotFound(lastErr):
			// Removed (or removed meanwhile, by the promoter or an admin).
			return true, nil
		case apierrors.IsConflict(lastErr), apierrors.IsServiceUnavailable(lastErr), apierrors.IsTooManyRequests(lastErr),
			apierrors.IsTimeout(lastErr), apierrors.IsServerTimeout(lastErr), utilnet.IsConnectionRefused(lastErr), utilnet.IsConnectionReset(lastErr):
			return false, nil
		default:
			return false, lastErr
		}
	})
	if err != nil && lastErr != nil {
		return lastErr
	}
	return err
}
