package controlplane

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// StartEtcd starts the embedded etcd member of the data dir
// (datadir.Dir.EtcdConfig, with the options' tuning), or returns nil with
// an external etcd. A member of a cluster first asks its peers whether
// they still count it; ctx bounds that. The member elects itself, or
// catches up with its cluster, while the configuration is built: NewConfig
// takes the steps of a started member (settleEtcd). Close it once the
// server has stopped, before the data dir.
func (c CompletedOptions) StartEtcd(ctx context.Context) (*embeddedetcd.Server, error) {
	if c.EmbeddedEtcd == nil {
		return nil, nil
	}
	cfg, err := c.DataDir.EtcdConfig()
	if err != nil {
		return nil, err
	}
	cfg.QuotaBackendBytes = c.EmbeddedEtcd.QuotaBackendBytes
	cfg.LogLevel = c.EmbeddedEtcd.LogLevel
	if cfg.PeerURL != "" {
		// A joining member may catch up for as long as the cluster lets it.
		cfg.ReadyTimeout = c.EmbeddedEtcd.Cluster.LearnerTimeout
	}
	member, err := embeddedetcd.Start(ctx, cfg)
	if errors.Is(err, embeddedetcd.ErrNotAMember) {
		return nil, fmt.Errorf("%w. To join the cluster again, move %s and %s aside and start with --join and a new token (\"sample-generic-controlplane token create\" on a server of the cluster)",
			err, cfg.DataDir, filepath.Join(c.DataDir.Path, embeddedetcd.MembershipFile))
	}
	return member, err
}

// settleEtcd takes the steps of a started member before the API server
// uses it, each one named, in order:
//
//   - WaitReady: the member serves (it elected itself, or is part of a
//     quorum);
//   - WaitPromoted: a member that joined votes (the leader's server
//     promotes it once it has caught up);
//   - EnsurePeerURL: the cluster has the member's peer URL as this start
//     advertises it (a write to the cluster, when it changed);
//   - DefragmentIfFragmented: the database file gives back what is free,
//     when more than half of it is;
//   - RemoveReplacedEtcdData: what a snapshot restore replaced is removed,
//     now that the restored member has started.
func (c CompletedOptions) settleEtcd(ctx context.Context, etcd *embeddedetcd.Server) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	c.Notifier.Status("Waiting for etcd")
	if err := etcd.WaitReady(ctx); err != nil {
		return err
	}
	if etcd.IsLearner() {
		c.Notifier.Status("Waiting for the cluster to promote this etcd member")
	}
	if err := etcd.WaitPromoted(ctx); err != nil {
		return err
	}
	logger.V(1).Info("Embedded etcd is ready", "socket", c.DataDir.EtcdSocket, "duration", time.Since(start))
	etcd.EnsurePeerURL(ctx)
	if err := etcd.DefragmentIfFragmented(ctx); err != nil {
		return err
	}
	c.DataDir.RemoveReplacedEtcdData(logger)
	return nil
}
