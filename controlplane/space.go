package controlplane

import (
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
)

// newSpaceMonitor watches the space of etcd's database: the embedded
// member's, which it also recovers from a full database (nobody else can
// reach that member to do it), or an external cluster's, which it only
// reports.
func (c CompletedConfig) newSpaceMonitor() (*maintenance.SpaceMonitor, error) {
	if etcd := c.EmbeddedEtcd; etcd != nil {
		client, err := etcdclient.Config([]string{etcd.ClientURL()}, "", "", "")
		if err != nil {
			return nil, err
		}
		return maintenance.NewSpaceMonitor(maintenance.SpaceConfig{Client: client, Recover: true, QuotaFlag: "--embedded-etcd-quota-bytes", Interval: c.Options.EtcdSpaceCheckInterval}), nil
	}
	t := c.Options.ControlPlane.Etcd.StorageConfig.Transport
	client, err := etcdclient.Config(t.ServerList, t.TrustedCAFile, t.CertFile, t.KeyFile)
	if err != nil {
		return nil, err
	}
	return maintenance.NewSpaceMonitor(maintenance.SpaceConfig{Client: client, QuotaFlag: "--quota-backend-bytes", Interval: c.Options.EtcdSpaceCheckInterval}), nil
}
