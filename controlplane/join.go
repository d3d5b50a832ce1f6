package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// undoJoinTimeout bounds the removal of a member whose start failed.
const undoJoinTimeout = 30 * time.Second

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
	c.Membership = &m
	klog.FromContext(ctx).Info("Joined the cluster as a learner; the member starts and catches up", "server", c.joinPlan.server, "member", name, "memberID", resp.MemberID, "duration", time.Since(start))
	return joined, nil
}

// JoinedMember is the member a start added to its cluster.
type JoinedMember struct {
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
		logger.Error(removeErr, "The start failed after the join, and the member could not be taken back out; the cluster removes a learner that never catches up after --etcd-learner-timeout, or remove it with \"sample-generic-controlplane cluster remove\"", "member", j.name, "memberID", j.memberID)
		return fmt.Errorf("%w (the member %s that this start added to the cluster at %s could not be taken back out: %v; remove it with \"sample-generic-controlplane cluster remove %s\" on a server of the cluster)", cause, j.name, j.server, removeErr, j.memberID)
	}
	if err := j.dataDir.RemoveEtcdMember(); err != nil {
		return errors.Join(cause, err)
	}
	logger.Info("The start failed after the join: took the member back out of the cluster", "member", j.name, "memberID", j.memberID, "server", j.server)
	return fmt.Errorf("%w (the member %s that this start added to the cluster at %s was taken back out; the join token is used: start again with --join and a new token)", cause, j.name, j.server)
}

// removeFromCluster asks the server the member joined to remove it.
func (j *JoinedMember) removeFromCluster(ctx context.Context) error {
	u, err := url.Parse(j.server)
	if err != nil {
		return err
	}
	creds := j.dataDir.PKI
	certPEM, keyPEM, err := creds.CA.IssueClientCertificate(pki.AdminUser, []string{pki.AdminGroup})
	if err != nil {
		return err
	}
	config := &rest.Config{
		Host: j.server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     creds.CA.CertPEM(),
			CertData:   certPEM,
			KeyData:    keyPEM,
			ServerName: u.Hostname(),
		},
	}
	_, err = cluster.NewMembersClient(config).Remove(ctx, j.memberID, false)
	if apierrors.IsNotFound(err) {
		// Removed meanwhile (by the promoter, or an admin).
		return nil
	}
	return err
}
