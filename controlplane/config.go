package controlplane

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/klog/v2"
	genericserver "k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic/server"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// Config is a control plane's configuration, before defaults derived from
// other fields are filled in.
type Config struct {
	Options CompletedOptions
	// APIs configures the server chain (apiextensions → generic native
	// APIs → aggregator) exactly as the upstream generic sample does.
	APIs *genericserver.Config
	// EmbeddedEtcd is the running etcd member; nil with external etcd.
	EmbeddedEtcd *embeddedetcd.Server
}

// CompletedConfig is a Config whose derived fields are filled in.
type CompletedConfig struct {
	*completedConfig
}

type completedConfig struct {
	Options      CompletedOptions
	APIs         genericserver.CompletedConfig
	EmbeddedEtcd *embeddedetcd.Server
}

// NewConfig builds the configuration of every server in the chain. Like
// upstream's, it binds the secure port and needs a reachable etcd (the
// storage factory talks to it), so it starts the embedded etcd member here,
// after binding the port: a port in use fails before etcd is touched. The
// member stops when opts are released, which Server.Run does when it returns.
func NewConfig(ctx context.Context, opts CompletedOptions) (*Config, error) {
	ss := opts.ControlPlane.SecureServing
	if ss.Listener == nil {
		addr := net.JoinHostPort(ss.BindAddress.String(), strconv.Itoa(ss.BindPort))
		listener, port, err := genericoptions.CreateListener(ss.BindNetwork, addr, net.ListenConfig{})
		if err != nil {
			return nil, fmt.Errorf("--secure-port %d on --bind-address %s: %w", ss.BindPort, ss.BindAddress, err)
		}
		ss.Listener, ss.BindPort = listener, port
		opts.addCleanup(func() { listener.Close() }) //nolint:errcheck // closed twice after serving
	}

	logger := klog.FromContext(ctx)
	var etcd *embeddedetcd.Server
	if opts.EtcdSocket != "" {
		start := time.Now()
		var err error
		if etcd, err = startEmbeddedEtcd(ctx, opts); err != nil {
			return nil, err
		}
		opts.addCleanup(etcd.Close)
		logger.V(1).Info("Embedded etcd is ready", "socket", opts.EtcdSocket, "duration", time.Since(start))
	}

	start := time.Now()
	apis, err := genericserver.NewConfig(opts.ControlPlane)
	if err != nil {
		return nil, fmt.Errorf("configuring the API servers: %w", err)
	}
	logger.V(1).Info("API servers configured", "duration", time.Since(start))
	if etcd != nil {
		// Upstream's sample assumes three API servers, and with more than
		// one a new CRD waits 5 s before it is Established so the others
		// can catch up. Nobody else can reach the embedded etcd, so this
		// server is the only one.
		apis.APIExtensions.ExtraConfig.MasterCount = 1
	}
	return &Config{Options: opts, APIs: apis, EmbeddedEtcd: etcd}, nil
}

func startEmbeddedEtcd(ctx context.Context, opts CompletedOptions) (*embeddedetcd.Server, error) {
	etcd, err := embeddedetcd.Start(embeddedetcd.Config{
		DataDir:           filepath.Join(opts.DataDir, "etcd"),
		SocketPath:        opts.EtcdSocket,
		PeerCertFile:      opts.PKI.EtcdPeerCertFile,
		PeerKeyFile:       opts.PKI.EtcdPeerKeyFile,
		PeerTrustedCAFile: opts.PKI.EtcdCA.CertFile,
		QuotaBackendBytes: opts.EmbeddedEtcd.QuotaBackendBytes,
		LogLevel:          opts.EmbeddedEtcd.LogLevel,
	})
	if err != nil {
		return nil, err
	}
	if err := etcd.WaitReady(ctx); err != nil {
		etcd.Close()
		return nil, err
	}
	return etcd, nil
}

// Complete fills in the fields derived from others.
func (c *Config) Complete() (CompletedConfig, error) {
	apis, err := c.APIs.Complete()
	if err != nil {
		return CompletedConfig{}, err
	}
	return CompletedConfig{&completedConfig{Options: c.Options, APIs: apis, EmbeddedEtcd: c.EmbeddedEtcd}}, nil
}
