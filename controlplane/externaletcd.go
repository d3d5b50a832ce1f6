package controlplane

import (
	"context"

	"k8s.io/apiserver/pkg/storage/storagebackend"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/externaltls"
)

// checkExternalEtcd checks the TLS files of --etcd-servers against the
// first of its members that answers, before the storage is configured.
// Upstream's etcd client retries a handshake that fails as it retries a
// member that is down: a CA that did not sign the members' certificates,
// or a missing client certificate, would make the start wait 20 s, then
// fail with "etcd grpc connection not ready: context deadline exceeded".
// Those never heal: the start fails at once, naming the flag to fix. An
// etcd that no member of answers is left to upstream's client, which
// waits for it as before.
func checkExternalEtcd(ctx context.Context, transport storagebackend.TransportConfig) error {
	files := externaltls.Files{CAFile: transport.TrustedCAFile, CertFile: transport.CertFile, KeyFile: transport.KeyFile}
	return externaltls.Check(ctx, transport.ServerList, files)
}
