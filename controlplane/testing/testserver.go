// Package testing runs a complete control plane inside a Go test process: an
// embedded etcd on a temporary data dir, the API servers on a free loopback
// port, and clients that authenticate with real certificates.
package testing

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

func init() {
	// Several servers in one process each apply the same logging
	// configuration; that must not be an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// DefaultStartTimeout bounds how long StartTestServer waits for readiness.
const DefaultStartTimeout = 60 * time.Second

// Options tune a test server. The zero value gives a fresh control plane.
type Options struct {
	// DataDir to use; empty means a new t.TempDir(). Pass the DataDir of a
	// stopped server to restart it on the same data.
	DataDir string
	// Flags are command-line flags of the control plane, e.g. "--controllers=*,-garbage-collector-controller".
	Flags []string
	// StartTimeout bounds the wait for readiness, and each wait for CRDs to
	// be served; DefaultStartTimeout if zero.
	StartTimeout time.Duration
	// Customize, if set, is given the options before Flags are parsed, to
	// compose the control plane as a program embedding it does: add API
	// groups, controllers, admission plugins and bootstraps, or choose the
	// served resources. The binary's composition is kana.Install.
	Customize func(*controlplane.Options) error
	// CRDPaths are CRD files (.yaml, .yml or .json, with one or more
	// documents) or directories of them (not read recursively), as
	// envtest's CRDInstallOptions.Paths. The server installs them once it
	// is ready, and StartTestServer returns when they are established and in
	// discovery. Unlike envtest, a missing path, a directory without CRD
	// files or a document that is not an apiextensions.k8s.io/v1 CRD is an
	// error. CRDs that exist already (a restart on the same DataDir) are
	// updated to what the files say.
	CRDPaths []string
	// Webhooks are the suite's admission webhooks and where its webhook
	// server listens, as envtest's WebhookInstallOptions: configurations
	// as objects or files, the local serving host, port and certificate
	// directory (by default 127.0.0.1, a free port, a new temporary
	// directory). Start makes a serving certificate for the host, points
	// every webhook and the conversion webhook of every CRD in CRDPaths
	// at https://host:port/<path> with its CA (before the CRDs are
	// created), installs the configurations after the CRDs, and returns
	// once the API server calls them (install.WebhookOptions.Install says
	// how). TestServer.Webhooks has what the suite's webhook server needs.
	// nil: none, unless a CRD in CRDPaths converts by webhook, which gets
	// the defaults. Options given here are copied, never changed; the
	// TestServer.Webhooks of a server, given to the next one (a restart on
	// the same DataDir), keep its port and certificate.
	Webhooks *install.WebhookOptions
}

// TestServer is a running control plane.
type TestServer struct {
	// ClientConfig authenticates as the admin (system:masters) with a client
	// certificate and verifies the server against the control plane's CA.
	ClientConfig *rest.Config
	// DataDir holds etcd data, PKI and admin.kubeconfig.
	DataDir string
	// KubeconfigPath is the admin kubeconfig the server wrote.
	KubeconfigPath string
	// Server is the control plane itself.
	Server *controlplane.Server
	// Webhooks are Options.Webhooks prepared and installed:
	// LocalServingHost, LocalServingPort and LocalServingCertDir (with
	// tls.crt and tls.key) are where the suite serves its webhooks, e.g.
	// controller-runtime's webhook.NewServer(webhook.Options{Host: …,
	// Port: …, CertDir: …}); LocalServingCAData is the CA the API server
	// trusts for them. nil when the server has no webhooks.
	Webhooks *install.WebhookOptions

	cancel context.CancelFunc
	done   chan error
	// listener is the free port the server was given; Stop closes it
	// should the server have stopped before it took it over.
	listener net.Listener
	// startTimeout bounds InstallCRDs too.
	startTimeout time.Duration
	stopOnce     sync.Once
	stopErr      error
	// restoreGates gives the process-wide feature gates back the values
	// they had before the server's --feature-gates.
	restoreGates func() error
}

// StartTestServer starts a control plane and waits until it is ready, the
// CRDs in opts.CRDPaths are served and the webhooks of opts.Webhooks are in
// effect. It stops the server when the test ends; call Stop to stop it earlier (e.g. to
// restart on the same DataDir). It calls t.Fatal if the server cannot start.
func StartTestServer(t testing.TB, opts Options) *TestServer {
	t.Helper()
	s, err := Start(t.Context(), t.TempDir, opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return s
}

// Start starts a control plane outside of a testing.TB, e.g. from TestMain
// or a benchmark harness. tempDir returns a fresh directory when
// opts.DataDir is empty. The caller must call Stop.
func Start(ctx context.Context, tempDir func() string, opts Options) (*TestServer, error) {
	if opts.DataDir == "" {
		opts.DataDir = tempDir()
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	// Read the CRDs first: a missing file should fail the test before it
	// pays for a server.
	crds, err := install.ReadCRDs(opts.CRDPaths...)
	if err != nil {
		return nil, fmt.Errorf("Options.CRDPaths: %w", err)
	}
	webhooks, err := install.PrepareWebhooks(opts.Webhooks, crds, tempDir)
	if err != nil {
		return nil, fmt.Errorf("Options.Webhooks: %w", err)
	}
	o := controlplane.NewOptions()
	// The test server's API server is the only one on its etcd: a deleted
	// namespace is emptied at once, instead of after the 5 s that let other
	// API servers see the deletion (controllers/namespace says what a zero
	// grace period still races). Tests that wait for a namespace to go
	// would otherwise wait 5 s each.
	o.Controllers.NamespaceDeletionGracePeriod = 0
	if opts.Customize != nil {
		if err := opts.Customize(o); err != nil {
			return nil, fmt.Errorf("customizing the control plane: %w", err)
		}
	}
	// A registry of its own for each server, as upstream's kube-apiserver
	// test server has: the process-wide one keeps the --feature-gates
	// values it last parsed, and would apply them again to a server started
	// without the flag. It sets the process-wide gate, as in the binary.
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, compatibility.DefaultBuildEffectiveVersion(), utilfeature.DefaultMutableFeatureGate); err != nil {
		return nil, err
	}
	o.ControlPlane.GenericServerRunOptions.ComponentGlobalsRegistry = registry
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet("test-server", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(opts.Flags); err != nil {
		return nil, fmt.Errorf("flags %q: %w", opts.Flags, err)
	}
	// --feature-gates sets process-wide gates, as in the binary; Stop gives
	// the next server (and test) the previous values back. Logging is the
	// test process's own.
	restoreGates := snapshotFeatureGates()
	if _, err := o.ApplyToProcess(false); err != nil {
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("flags %q: %w", opts.Flags, err), restoreGates()})
	}
	o.DataDir = opts.DataDir
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("listening on a free loopback port: %w", err), restoreGates()})
	}
	o.ControlPlane.SecureServing.Listener = listener
	o.ControlPlane.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port

	runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), klog.Background()))
	s := &TestServer{DataDir: opts.DataDir, cancel: cancel, listener: listener, done: make(chan error, 1), startTimeout: opts.StartTimeout, restoreGates: restoreGates}
	// The binary's start-up sequence, in the background until Stop.
	ready := make(chan *controlplane.Server, 1)
	go func() {
		s.done <- controlplane.Serve(runCtx, o, func(server *controlplane.Server) { ready <- server })
	}()
	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case s.Server = <-ready:
	case err := <-s.done:
		cancel()
		listener.Close() //nolint:errcheck // closed already unless the start failed before Listen
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("control plane stopped before it was ready: %w", err), restoreGates()})
	case <-timer.C:
		stopErr := s.Stop()
		return nil, fmt.Errorf("control plane not ready after %s (stop: %v)", opts.StartTimeout, stopErr)
	}
	s.KubeconfigPath = s.Server.KubeconfigPath()
	cfg, err := s.Server.AdminRESTConfig()
	if err != nil {
		return nil, utilerrors.NewAggregate([]error{err, s.Stop()})
	}
	cfg.QPS, cfg.Burst = -1, 0 // tests are not to be throttled client-side
	s.ClientConfig = cfg
	if _, err := install.InstallCRDs(ctx, cfg, crds, opts.StartTimeout); err != nil {
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("Options.CRDPaths: %w", err), s.Stop()})
	}
	if webhooks != nil {
		if err := webhooks.Install(ctx, cfg, opts.StartTimeout); err != nil {
			return nil, utilerrors.NewAggregate([]error{fmt.Errorf("Options.Webhooks: %w", err), s.Stop()})
		}
	}
	s.Webhooks = webhooks
	return s, nil
}

// Stop stops the control plane and waits until its etcd is closed and its
// data dir unlocked. It is safe to call more than once.
func (s *TestServer) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		s.stopErr = utilerrors.NewAggregate([]error{<-s.done, s.restoreGates()})
		s.listener.Close() //nolint:errcheck // closed already unless the start failed before Listen
	})
	return s.stopErr
}

// snapshotFeatureGates records the process-wide feature gates and returns
// a function that sets back those that changed since. Servers that run at
// the same time share the gates, so give them the same --feature-gates.
func snapshotFeatureGates() func() error {
	before := map[featuregate.Feature]bool{}
	for f := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		before[f] = utilfeature.DefaultFeatureGate.Enabled(f)
	}
	return func() error {
		changed := map[string]bool{}
		for f, enabled := range before {
			if utilfeature.DefaultFeatureGate.Enabled(f) != enabled {
				changed[string(f)] = enabled
			}
		}
		if len(changed) == 0 {
			return nil
		}
		return utilfeature.DefaultMutableFeatureGate.SetFromMap(changed)
	}
}

// InstallCRDs creates the CRDs found in paths (files or directories, as
// Options.CRDPaths) or updates those that exist, and waits until all are
// served (install.InstallCRDs says what that means), at most the server's
// StartTimeout. A CRD that converts by webhook is pointed at the server's
// Webhooks first, as at Start. It returns the CRDs as the server has them,
// in the order read.
func (s *TestServer) InstallCRDs(ctx context.Context, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	// s.Webhooks was prepared at Start: this only reads it, and may run in
	// parallel.
	installed, err := install.CRDs(ctx, s.ClientConfig, s.Webhooks, s.startTimeout, paths...)
	if err != nil {
		return nil, fmt.Errorf("InstallCRDs: %w", err)
	}
	return installed, nil
}

// ClientConfigFor returns a client configuration that authenticates as user
// in groups with a client certificate issued by the control plane's CA, to
// test authorization: such a user may do nothing until an RBAC binding
// names it or one of its groups (bindings take effect within a moment, so
// poll for the first allowed request). Each call issues a new certificate;
// it is safe to call from parallel tests.
func (s *TestServer) ClientConfigFor(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := s.Server.PKI().CA.IssueClientCertificate(user, groups)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(s.ClientConfig)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}
