// Package etcdclient connects to etcd members: the embedded member's unix
// socket, or the members of an external cluster secured as the API server's
// --etcd-cafile, --etcd-certfile and --etcd-keyfile secure them. The
// commands that ask etcd (snapshot, etcd status, defrag) and the
// maintenance of an external cluster use it.
package etcdclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultDialTimeout bounds the wait for a member to answer a first request.
const DefaultDialTimeout = 5 * time.Second

// Config is the configuration of a client of the etcd members at
// endpoints: the embedded member's unix:// socket, or members of an external
// cluster secured, as the control plane's --etcd-cafile, --etcd-certfile and
// --etcd-keyfile do, by caFile, certFile and keyFile. Its dial timeout bounds
// how long a first request waits for an endpoint that does not answer.
func Config(endpoints []string, caFile, certFile, keyFile string) (clientv3.Config, error) {
	cfg := clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: DefaultDialTimeout,
		Logger:      zap.NewNop(),
	}
	if caFile == "" && certFile == "" && keyFile == "" {
		return cfg, nil
	}
	info := transport.TLSInfo{TrustedCAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	tlsConfig, err := info.ClientConfig()
	if err != nil {
		return cfg, fmt.Errorf("TLS configuration for %s: %w", strings.Join(endpoints, ","), err)
	}
	cfg.TLS = tlsConfig
	return cfg, nil
}

// Connect returns a client of the etcd members cfg names (see
// Config) once one of them has answered a status request, or an
// error that names each endpoint and why it did not answer within
// cfg.DialTimeout: the client alone would retry an endpoint that does not
// answer, or refuses the credentials, without end.
func Connect(ctx context.Context, cfg clientv3.Config) (*clientv3.Client, error) {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	var errs []string
	for _, endpoint := range cfg.Endpoints {
		ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		_, err := client.Status(ctx, endpoint)
		cancel()
		if err == nil {
			return client, nil
		}
		errs = append(errs, fmt.Sprintf("%s (%v)", endpoint, err))
	}
	client.Close() //nolint:errcheck // nothing to flush
	hint := ""
	if cfg.TLS != nil {
		hint = ", and that --etcd-cafile, --etcd-certfile and --etcd-keyfile are right for it"
	}
	return nil, fmt.Errorf("etcd did not answer within %s at %s: check that it runs%s", cfg.DialTimeout, strings.Join(errs, ", "), hint)
}
