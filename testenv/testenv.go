// Package testenv starts sample-generic-controlplane as a child process for
// a Go test suite: a complete control plane (garbage collector and namespace
// controller included) on a fresh data dir and a free loopback port, with
// clients that authenticate with certificates from its CA. Its module needs
// no k8s.io/kubernetes, so a suite requires it with a plain require and no
// replace lines.
//
// Its API is controlplane/testing's (the in-process server, which needs
// k8s.io/kubernetes in the suite's module graph): switching between the two
// is an import change. What only a process needs is added: where the binary
// is (Options.Binary, $SGCP_BINARY, then $PATH) and where its output goes.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/testenv/install"
)

const (
	// DefaultStartTimeout bounds how long Start waits for readiness.
	DefaultStartTimeout = 60 * time.Second
	// DefaultStopTimeout bounds how long Stop waits after SIGTERM before it
	// kills the process. The binary stops within 13 s whatever etcd's state.
	DefaultStopTimeout = 20 * time.Second
	// EnvAttachOutput, set to true, attaches the binary's output to the
	// test process's stdout and stderr, as Options.AttachOutput does.
	EnvAttachOutput = "SGCP_ATTACH_OUTPUT"
)

// Options tune a test server. The zero value gives a fresh control plane.
type Options struct {
	// DataDir to use; empty means a new temporary one, which Stop removes.
	// Pass the DataDir of a stopped server to restart it on the same data;
	// Stop leaves a DataDir given here in place.
	DataDir string
	// Flags are command-line flags of the control plane, e.g.
	// "--controllers=*,-garbage-collector-controller". The launcher passes
	// --data-dir (set DataDir instead), --secure-port=0,
	// --bind-address=127.0.0.1 and --namespace-deletion-grace-period=0
	// before them.
	Flags []string
	// StartTimeout bounds the wait for readiness (and, unless
	// InstallTimeout is set, each wait for CRDs to be served and webhooks
	// to take effect); DefaultStartTimeout if zero.
	StartTimeout time.Duration
	// CRDPaths are CRD files (.yaml, .yml or .json, with one or more
	// documents) or directories of them (not read recursively), as
	// envtest's CRDInstallOptions.Paths. They are read before the process
	// starts, so a bad path fails at once; the server installs them once it
	// is ready, and Start returns when they are established and in
	// discovery. Unlike envtest, a missing path, a directory without CRD
	// files or a document that is not an apiextensions.k8s.io/v1 CRD is an
	// error. CRDs that exist already (a restart on the same DataDir) are
	// updated to what the files say.
	CRDPaths []string
	// CRDs are CRDs given as objects (envtest's CRDs), installed with
	// those of CRDPaths; the objects given stay as they are.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// InstallTimeout bounds each wait for the CRDs to be served and for
	// the webhooks to take effect; StartTimeout if zero.
	InstallTimeout time.Duration
	// Webhooks are the suite's admission webhooks and where its webhook
	// server listens, as envtest's WebhookInstallOptions: configurations
	// as objects or files, the local serving host, port and certificate
	// directory (by default 127.0.0.1, a free port, a directory in the
	// server's work dir). Start makes a serving certificate for the host,
	// points every webhook and the conversion webhook of every CRD in
	// CRDPaths at https://host:port/<path> with its CA (before the CRDs are
	// created), installs the configurations after the CRDs, and returns
	// once the API server calls them (install.WebhookOptions.Install says
	// how). TestServer.Webhooks has what the suite's webhook server needs.
	// nil: none, unless a CRD in CRDPaths converts by webhook, which gets
	// the defaults. Options given here are copied, never changed; the
	// TestServer.Webhooks of a server, given to the next one (a restart on
	// the same DataDir), keep its port and certificate.
	Webhooks *install.WebhookOptions

	// Binary is the path of sample-generic-controlplane. Empty means
	// $SGCP_BINARY, then sample-generic-controlplane on $PATH.
	Binary string
	// StopTimeout bounds how long Stop waits after SIGTERM before it kills
	// the process; DefaultStopTimeout if zero.
	StopTimeout time.Duration
	// AttachOutput copies the binary's stdout and stderr to the test
	// process's (as envtest's AttachControlPlaneOutput); so does
	// $SGCP_ATTACH_OUTPUT=true. Either way they are written to log files in
	// the server's work dir, whose last lines a failed start quotes.
	AttachOutput bool
}

// TestServer is a running control plane in a child process.
type TestServer struct {
	// ClientConfig authenticates as the admin (system:masters) with a client
	// certificate and verifies the server against the control plane's CA.
	ClientConfig *rest.Config
	// DataDir holds etcd data, PKI and admin.kubeconfig.
	DataDir string
	// KubeconfigPath is the admin kubeconfig the server wrote.
	KubeconfigPath string
	// CRDs are the CRDs of Options.CRDs and Options.CRDPaths as the
	// server had them once they were served.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Webhooks are Options.Webhooks prepared and installed:
	// LocalServingHost, LocalServingPort and LocalServingCertDir (with
	// tls.crt and tls.key, removed by Stop) are where the suite serves its
	// webhooks, e.g. controller-runtime's webhook.NewServer(webhook.Options{
	// Host: …, Port: …, CertDir: …}); LocalServingCAData is the CA the API
	// server trusts for them. nil when the server has no webhooks.
	Webhooks *install.WebhookOptions

	binary  string
	process *process
	// workDir holds the logs and, unless Options.DataDir was given, the
	// data dir; Stop removes it.
	workDir        string
	startTimeout   time.Duration
	installTimeout time.Duration
	stopTimeout    time.Duration
	stopOnce       sync.Once
	stopErr        error
}

// StartTestServer starts a control plane and waits until it is ready, the
// CRDs in opts.CRDPaths are served and the webhooks of opts.Webhooks are in
// effect. It stops the server when the test
// ends (and, if the test failed, logs the last lines of its stderr); call
// Stop to stop it earlier (e.g. to restart on the same DataDir). It calls
// t.Fatal if the server cannot start.
func StartTestServer(t testing.TB, opts Options) *TestServer {
	t.Helper()
	s, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the control plane's stderr ended with:\n%s", s.process.tail())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stopping control plane: %v", err)
		}
	})
	return s
}

// Start starts a control plane outside of a testing.TB, e.g. from TestMain
// or a benchmark harness; ctx bounds the start only. The caller must call
// Stop.
func Start(ctx context.Context, opts Options) (*TestServer, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	attach, err := attachOutput(opts.AttachOutput)
	if err != nil {
		return nil, err
	}
	for _, f := range opts.Flags {
		if f == "--data-dir" || strings.HasPrefix(f, "--data-dir=") {
			return nil, fmt.Errorf("Options.Flags: %q: set Options.DataDir instead, which Stop then leaves in place", f)
		}
	}
	binary, err := findBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	// Read the CRDs first: a missing file should fail the test before it
	// pays for a server.
	if opts.InstallTimeout == 0 {
		opts.InstallTimeout = opts.StartTimeout
	}
	crds, err := install.ReadCRDs(opts.CRDPaths...)
	if err != nil {
		return nil, fmt.Errorf("Options.CRDPaths: %w", err)
	}
	for _, crd := range slices.Backward(opts.CRDs) {
		crds = slices.Insert(crds, 0, crd.DeepCopy())
	}

	dataDir := opts.DataDir
	if dataDir != "" {
		// Absolute, as the kubeconfig path the binary prints is: the
		// test finds admin.kubeconfig in DataDir, wherever it changes to.
		if dataDir, err = filepath.Abs(dataDir); err != nil {
			return nil, fmt.Errorf("Options.DataDir: %w", err)
		}
	}
	workDir, err := os.MkdirTemp("", "sgcp-testenv-")
	if err != nil {
		return nil, fmt.Errorf("creating the server's work dir: %w", err)
	}
	// Prepared before the process starts, as the CRDs are read: a wrong
	// path fails at once.
	webhooks, err := install.PrepareWebhooks(opts.Webhooks, crds, func() string { return filepath.Join(workDir, "webhook-certs") })
	if err != nil {
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("Options.Webhooks: %w", err), os.RemoveAll(workDir)})
	}
	if dataDir == "" {
		dataDir = filepath.Join(workDir, "data")
	}
	s := &TestServer{DataDir: dataDir, Webhooks: webhooks, binary: binary, workDir: workDir, startTimeout: opts.StartTimeout, installTimeout: opts.InstallTimeout, stopTimeout: opts.StopTimeout}
	s.process, err = startProcess(binary, serverArgs(s.DataDir, opts.Flags), workDir, attach)
	if err != nil {
		return nil, utilerrors.NewAggregate([]error{err, os.RemoveAll(workDir)})
	}
	s.KubeconfigPath, err = s.process.waitReady(ctx, opts.StartTimeout)
	if err != nil {
		// The process has exited; its log's end is in err.
		return nil, utilerrors.NewAggregate([]error{err, os.RemoveAll(workDir)})
	}
	if s.ClientConfig, err = adminConfig(s.KubeconfigPath); err != nil {
		return nil, utilerrors.NewAggregate([]error{err, s.Stop()})
	}
	if s.CRDs, err = install.InstallCRDs(ctx, s.ClientConfig, crds, opts.InstallTimeout); err != nil {
		return nil, utilerrors.NewAggregate([]error{fmt.Errorf("Options.CRDPaths: %w", err), s.Stop()})
	}
	if webhooks != nil {
		if err := webhooks.Install(ctx, s.ClientConfig, opts.InstallTimeout); err != nil {
			return nil, utilerrors.NewAggregate([]error{fmt.Errorf("Options.Webhooks: %w", err), s.Stop()})
		}
	}
	return s, nil
}

// attachOutput is whether the binary's output goes to the test's too: when
// asked in Options or in $SGCP_ATTACH_OUTPUT.
func attachOutput(asked bool) (bool, error) {
	value := os.Getenv(EnvAttachOutput)
	if asked || value == "" {
		return asked, nil
	}
	attach, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("$%s=%q: write true or false", EnvAttachOutput, value)
	}
	return attach, nil
}

// serverArgs are the binary's arguments: a free port chosen by the server
// itself, so that parallel tests never race for one, and no namespace
// deletion grace period, as in the in-process test server: its API server
// is the only one on its etcd. flags come last, so a test can set either
// back.
func serverArgs(dataDir string, flags []string) []string {
	return append([]string{"--data-dir=" + dataDir, "--secure-port=0", "--bind-address=127.0.0.1", "--namespace-deletion-grace-period=0"}, flags...)
}

// adminConfig is the client configuration of the kubeconfig the server
// printed.
func adminConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig the control plane printed: %w", err)
	}
	// A binary that cannot serve on a port it chose itself names port 0.
	if u, err := url.Parse(cfg.Host); err != nil || u.Port() == "" || u.Port() == "0" {
		return nil, fmt.Errorf("the kubeconfig the control plane printed, %s, names server %q, not the port it serves on: use a binary that supports --secure-port=0", kubeconfig, cfg.Host)
	}
	cfg.QPS, cfg.Burst = -1, 0 // tests are not to be throttled client-side
	return cfg, nil
}

// Stop sends the control plane SIGTERM, waits until it has exited (killing
// it after Options.StopTimeout) and removes the work dir and the data dir
// it created. It returns an error when the process had exited before, or
// did not exit cleanly, quoting the end of its stderr. It is safe to call
// more than once.
func (s *TestServer) Stop() error {
	s.stopOnce.Do(func() {
		err := s.process.stop(s.stopTimeout)
		if rmErr := os.RemoveAll(s.workDir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing the server's work dir: %w", rmErr))
		}
		s.stopErr = err
	})
	return s.stopErr
}

// InstallCRDs creates the CRDs found in paths (files or directories, as
// Options.CRDPaths) or updates those that exist, and waits until all are
// served (install.InstallCRDs says what that means), at most the server's
// InstallTimeout. A CRD that converts by webhook is pointed at the server's
// Webhooks first, as at Start. It returns the CRDs as the server has them,
// in the order read.
func (s *TestServer) InstallCRDs(ctx context.Context, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	// s.Webhooks was prepared at Start: this only reads it, and may run in
	// parallel.
	installed, err := install.CRDs(ctx, s.ClientConfig, s.Webhooks, s.installTimeout, paths...)
	if err != nil {
		return nil, fmt.Errorf("InstallCRDs: %w", err)
	}
	return installed, nil
}

// ClientConfigFor returns a client configuration that authenticates as user
// in groups with a client certificate issued by the control plane's CA, to
// test authorization: such a user may do nothing until an RBAC binding
// names it or one of its groups (bindings take effect within a moment, so
// poll for the first allowed request). Each call issues a new certificate,
// valid for a day, with the binary's "kubeconfig user" command; it is safe
// to call from parallel tests.
func (s *TestServer) ClientConfigFor(user string, groups ...string) (*rest.Config, error) {
	args := []string{"kubeconfig", "user", user, "--data-dir=" + s.DataDir}
	for _, g := range groups {
		args = append(args, "--group="+g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.binary, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	kubeconfig, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ClientConfigFor(%q): %s %s: %w: %s", user, s.binary, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("ClientConfigFor(%q): the kubeconfig %s printed: %w", user, s.binary, err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}
