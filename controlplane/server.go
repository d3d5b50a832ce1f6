package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
)

// readyPollInterval is how often Run asks /readyz until the server is ready.
const readyPollInterval = 20 * time.Millisecond

// Server is a control plane that is configured but not necessarily running.
type Server struct {
	config *completedConfig
	ready  chan struct{}
	url    string
}

// New wires a server from its configuration, with no side effects of its
// own: the secure port is bound and the embedded etcd started already (by
// NewConfig, as upstream's configuration needs a reachable etcd); the APIs
// are installed and served only in Run.
func (c CompletedConfig) New() (*Server, error) {
	ss := c.Options.ControlPlane.SecureServing
	host := "127.0.0.1"
	if ss.BindAddress != nil && !ss.BindAddress.IsUnspecified() {
		host = ss.BindAddress.String()
	}
	return &Server{
		config: c.completedConfig,
		ready:  make(chan struct{}),
		url:    "https://" + net.JoinHostPort(host, strconv.Itoa(ss.BindPort)),
	}, nil
}

// URL is where the API is served.
func (s *Server) URL() string { return s.url }

// KubeconfigPath is the admin kubeconfig, written by Run before it serves.
func (s *Server) KubeconfigPath() string { return s.config.Options.KubeconfigPath() }

// DataDir is the resolved data directory.
func (s *Server) DataDir() string { return s.config.Options.DataDir }

// Ready is closed once /readyz succeeds: every API is installed and every
// post-start hook has finished.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// AdminRESTConfig returns a client configuration that authenticates as the
// admin (system:masters) and verifies the server against the CA. It is
// valid once Run has written the kubeconfig.
func (s *Server) AdminRESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
}

// Run writes the admin kubeconfig, serves the APIs and blocks until ctx is
// done. On the way out the controllers stop, then the API server drains
// in-flight requests, then the embedded etcd closes, then the data dir is
// unlocked, so the next start finds a clean member. Each wait is bounded
// (see stop.go): Run returns in time whatever etcd's state.
func (s *Server) Run(ctx context.Context) error {
	opts := s.config.Options
	defer opts.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	if etcd := s.config.EmbeddedEtcd; etcd != nil {
		go func() {
			select {
			case err := <-etcd.Err():
				cancel(fmt.Errorf("embedded etcd failed: %w", err))
			case <-etcd.Stopped():
				cancel(errors.New("embedded etcd stopped unexpectedly"))
			case <-ctx.Done():
			}
		}()
	}

	if err := bootstrap.EnsureAdminKubeconfig(s.KubeconfigPath(), s.url, opts.PKI); err != nil {
		return fmt.Errorf("writing admin kubeconfig: %w", err)
	}

	chain, err := createServerChain(ctx, s.config.APIs, opts.APIGroups)
	if err != nil {
		return err
	}
	// Readiness waits for each: e.g. the roles that let components use an
	// added API exist before the server reports ready.
	bootstraps := opts.Bootstraps
	if opts.Controllers != nil {
		if roles := controllerRoles(opts.Controllers); len(roles.ClusterRoles) > 0 {
			bootstraps = append([]Bootstrap{roles}, bootstraps...)
		}
	}
	for _, b := range bootstraps {
		if !b.runs(s.config.APIs.ControlPlane.Generic.MergedResourceConfig) {
			continue
		}
		if err := chain.GenericAPIServer.AddPostStartHook(b.Name, b.hook()); err != nil {
			return err
		}
	}

	// One liveness check per enabled controller: /livez/controller-<name>.
	// Not readiness: the controllers start only once the server is ready.
	var health *manager.Health
	if opts.Controllers != nil {
		health = manager.NewHealth(opts.Controllers)
		if err := chain.GenericAPIServer.AddLivezChecks(0, health.Checks()...); err != nil {
			return fmt.Errorf("adding controller health checks: %w", err)
		}
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return fmt.Errorf("preparing the API servers: %w", err)
	}
	// Upstream gives the HTTP server's shutdown --request-timeout (60 s).
	chain.GenericAPIServer.ShutdownTimeout = httpShutdownTimeout
	go s.signalReady(ctx, health)

	// Scheduled snapshots stop as soon as a stop begins (one in progress
	// is abandoned, leaving no file behind), and end before etcd closes.
	snapshotsCtx, stopSnapshots := context.WithCancel(ctx)
	defer stopSnapshots()
	snapshotsDone := make(chan struct{})
	go func() {
		defer close(snapshotsDone)
		if s.config.snapshots != nil {
			s.config.snapshots.run(snapshotsCtx)
		}
	}()

	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	controllersDone := make(chan struct{})
	go func() {
		defer close(controllersDone)
		s.runControllers(ctx, health)
	}()
	apiDone := make(chan error, 1)
	go func() { apiDone <- prepared.Run(apiCtx) }()

	var runErr error
	select {
	case runErr = <-apiDone:
	case <-ctx.Done():
		logger := klog.FromContext(ctx)
		// Controllers stop before the API server drains, so that they
		// finish their requests and release their Lease while it still
		// serves; the manager gives them --controller-shutdown-timeout.
		<-controllersDone
		logger.V(1).Info("Controllers stopped; stopping the API servers")
		stopAPI()
		runErr = awaitAPIStopped(logger, apiDone, chain.GenericAPIServer)
	}
	stopSnapshots()
	<-snapshotsDone
	klog.FromContext(ctx).V(1).Info("API servers stopped; stopping storage")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return runErr
}

// runControllers starts the in-process controllers once the API is ready
// and runs them until ctx is done. The manager acts as
// system:kube-controller-manager; each controller then acts as its own
// service account.
func (s *Server) runControllers(ctx context.Context, health *manager.Health) {
	if s.config.Options.Controllers == nil {
		return
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return
	}
	logger := klog.FromContext(ctx)
	// The loopback connection works whatever serving certificate and client
	// CA the user configured; impersonation gives the manager exactly the
	// permissions of system:kube-controller-manager.
	config := rest.CopyConfig(s.config.APIs.ControlPlane.Generic.LoopbackClientConfig)
	config.Impersonate = rest.ImpersonationConfig{UserName: user.KubeControllerManager}
	config.UserAgent = "sample-generic-controlplane/controllers"
	if err := manager.Run(ctx, s.config.Options.Controllers, config, health); err != nil {
		logger.Error(err, "Controllers ended with an error")
	}
}

// signalReady closes s.ready once /readyz answers 200 over the loopback
// connection, then, once the controllers (if any) have synced, returns the
// start-up garbage to the OS.
func (s *Server) signalReady(ctx context.Context, controllers *manager.Health) {
	client, err := kubernetes.NewForConfig(s.config.APIs.ControlPlane.Generic.LoopbackClientConfig)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot watch readiness")
		return
	}
	err = wait.PollUntilContextCancel(ctx, readyPollInterval, true, func(ctx context.Context) (bool, error) {
		var code int
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		return code == http.StatusOK, nil
	})
	if err != nil {
		return
	}
	close(s.ready)
	// Start-up builds the OpenAPI documents and bootstraps policy, then
	// the controllers list everything into their informers: tens of
	// megabytes of garbage, which the runtime would hand back to the OS only
	// slowly. Do it once, when the burst is over.
	if controllers != nil {
		select {
		case <-controllers.Synced():
		case <-ctx.Done():
			return
		}
	}
	debug.FreeOSMemory()
}

// NewServer validates completed options and builds a server from them:
// NewConfig, Complete and New in one call, as the binary and the test
// server use them. On error it releases the options (the data dir lock and
// the embedded etcd); on success Server.Run does.
func NewServer(ctx context.Context, opts CompletedOptions) (*Server, error) {
	server, err := newServer(ctx, opts)
	if err != nil {
		opts.Release()
		return nil, err
	}
	return server, nil
}

func newServer(ctx context.Context, opts CompletedOptions) (*Server, error) {
	if errs := opts.Validate(); len(errs) != 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	config, err := NewConfig(ctx, opts)
	if err != nil {
		return nil, err
	}
	completed, err := config.Complete()
	if err != nil {
		return nil, err
	}
	return completed.New()
}
