package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
)

// readyPollInterval is how often Run asks /readyz until the server is ready.
const readyPollInterval = 20 * time.Millisecond

// Server is a control plane whose server chain is built: Run serves it.
type Server struct {
	config   *completedConfig
	chain    *aggregatorapiserver.APIAggregator
	core     *coreStorage
	prepared preparedAPIs
	// listener serves the secure port (CompletedOptions.Listen, checked by
	// NewConfig); Run frees it when it stops.
	listener *servingListener
	// controllers reports each enabled controller's health; nil when the
	// control plane runs none.
	controllers *manager.Health
	// cluster is what the servers of a cluster serve each other; nil for
	// a server whose member runs alone.
	cluster *clusterParts
	// space watches etcd's database space (space.go).
	space *maintenance.SpaceMonitor
	url   string

	ready   chan struct{}
	stopped chan struct{}
	err     error
}

// clusterParts are the cluster's handlers' state.
type clusterParts struct {
	// etcd is a client of the local member; run closes it once the API
	// has stopped.
	etcd    *clientv3.Client
	members *cluster.Members
	// apiServerURL is where the other servers reach this one's API.
	apiServerURL string
}

// preparedAPIs is the server chain prepared to run (upstream's type is
// unexported).
type preparedAPIs interface {
	Run(ctx context.Context) error
}

// New builds the server chain (apiextensions → generic native APIs →
// aggregator) with every post-start hook (the bootstraps) and health check
// (one per controller), and prepares it to run (the OpenAPI documents are
// built here), so that every wiring error comes back from New, before
// anything serves. etcd must be ready: the storage talks to it. The chain's
// storage runs from here on: Run the server (with a done context it stops
// at once), or it keeps running until the process exits.
func (c CompletedConfig) New() (*Server, error) {
	c.Options.Notifier.Status("Starting the API server")
	chain, core, err := createServerChain(c.APIs, c.Options.APIGroups)
	if err != nil {
		return nil, err
	}
	s, err := c.newServer(chain, core)
	if err != nil {
		// Upstream's storage (watch caches, the compactor) stops here.
		chain.GenericAPIServer.Destroy()
		return nil, err
	}
	return s, nil
}

func (c CompletedConfig) newServer(chain *aggregatorapiserver.APIAggregator, core *coreStorage) (_ *Server, err error) {
	opts := c.Options
	// Readiness waits for each: e.g. the roles that let components use an
	// added API exist before the server reports ready.
	bootstraps := opts.Bootstraps
	var clustered *clusterParts
	if opts.EmbeddedEtcd != nil {
		bootstraps = append([]bootstrap.Bootstrap{joinTokenRBAC()}, bootstraps...)
	}
	switch {
	case opts.EmbeddedEtcd != nil && opts.Membership == nil:
		chain.GenericAPIServer.Handler.NonGoRestfulMux.Handle(jointoken.JoinPath, cluster.RunsAloneHandler())
	case opts.Membership != nil:
		if clustered, err = c.installCluster(chain.GenericAPIServer.Handler.NonGoRestfulMux); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				clustered.etcd.Close() //nolint:errcheck // in process
			}
		}()
	}
	if opts.Controllers != nil {
		if roles := bootstrap.ControllerRoles(opts.Controllers); len(roles.ClusterRoles) > 0 {
			bootstraps = append([]bootstrap.Bootstrap{roles}, bootstraps...)
		}
	}
	for _, b := range bootstraps {
		if !b.Runs(c.APIs.ControlPlane.Generic.MergedResourceConfig) {
			continue
		}
		if err := chain.GenericAPIServer.AddPostStartHook(b.Name, b.Hook()); err != nil {
			return nil, err
		}
	}

	// One liveness check per enabled controller: /livez/controller-<name>.
	// Not readiness: the controllers start only once the server is ready.
	var health *manager.Health
	if opts.Controllers != nil {
		health = manager.NewHealth(opts.Controllers)
		if err := chain.GenericAPIServer.AddLivezChecks(0, health.Checks()...); err != nil {
			return nil, fmt.Errorf("adding controller health checks: %w", err)
		}
	}
	space, err := c.newSpaceMonitor()
	if err != nil {
		return nil, err
	}
	if err := chain.GenericAPIServer.AddReadyzChecks(space.ReadyzCheck()); err != nil {
		return nil, fmt.Errorf("adding the etcd space check: %w", err)
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return nil, fmt.Errorf("preparing the API servers: %w", err)
	}
	// Upstream gives the HTTP server's shutdown --request-timeout (60 s).
	chain.GenericAPIServer.ShutdownTimeout = httpShutdownTimeout

	ss := opts.ControlPlane.SecureServing
	host := "127.0.0.1"
	if ss.BindAddress != nil && !ss.BindAddress.IsUnspecified() {
		host = ss.BindAddress.String()
	}
	return &Server{
		config:      c.completedConfig,
		chain:       chain,
		core:        core,
		prepared:    prepared,
		listener:    ss.Listener.(*servingListener),
		controllers: health,
		cluster:     clustered,
		space:       space,
		url:         "https://" + net.JoinHostPort(host, strconv.Itoa(ss.BindPort)),
		ready:       make(chan struct{}),
		stopped:     make(chan struct{}),
	}, nil
}

// URL is where the API is served.
func (s *Server) URL() string { return s.url }

// KubeconfigPath is the admin kubeconfig, written by Run before it serves.
func (s *Server) KubeconfigPath() string { return s.config.Options.DataDir.KubeconfigPath() }

// DataDir is the resolved data directory.
func (s *Server) DataDir() string { return s.config.Options.DataDir.Path }

// PKI are the control plane's credentials, e.g. its CA to issue client
// certificates with.
func (s *Server) PKI() *pki.PKI { return s.config.Options.DataDir.PKI }

// Ready is closed once /readyz succeeds: every API is installed and every
// post-start hook has finished. A server that fails before it is ready
// never closes it: wait on Stopped too.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Stopped is closed once Run has returned.
func (s *Server) Stopped() <-chan struct{} { return s.stopped }

// Err is what Run returned, once Stopped is closed.
func (s *Server) Err() error {
	select {
	case <-s.stopped:
		return s.err
	default:
		return nil
	}
}

// AdminRESTConfig returns a client configuration that authenticates as the
// admin (system:masters) and verifies the server against the CA. It is
// valid once Run has written the kubeconfig.
func (s *Server) AdminRESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", s.KubeconfigPath())
}

// Run writes the admin kubeconfig, creates kube-system, serves the APIs,
// runs the controllers once the server is ready and the scheduled
// snapshots, and blocks until ctx is done. On the way out the snapshots and
// the controllers stop, then the API server drains in-flight requests and
// the secure port is freed. Each wait is bounded (see stop.go): Run returns
// in time whatever etcd's state. It stops early, with an error, when the
// embedded etcd fails. Call it once; close etcd and the data dir after it.
func (s *Server) Run(ctx context.Context) error {
	defer close(s.stopped)
	s.err = s.run(ctx)
	return s.err
}

func (s *Server) run(ctx context.Context) error {
	defer s.listener.release()
	if s.cluster != nil {
		defer s.cluster.etcd.Close() //nolint:errcheck // in process
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	if etcd := s.config.EmbeddedEtcd; etcd != nil {
		go func() {
			select {
			case err := <-etcd.Err():
				cancel(fmt.Errorf("embedded etcd failed: %w", err))
			case <-etcd.Stopped():
				if etcd.Removed() {
					cancel(fmt.Errorf("this server's etcd member was removed from its cluster (\"cluster remove\"), and the server stops. To join the cluster again, move %s/etcd and %s/etcd-member.json aside and start with --join and a new token", s.DataDir(), s.DataDir()))
					return
				}
				cancel(errors.New("embedded etcd stopped unexpectedly"))
			case <-ctx.Done():
			}
		}()
	}

	// Before the first write: a member that starts on a full database
	// makes room first (space.go).
	if err := s.space.Open(ctx); err != nil {
		s.chain.GenericAPIServer.Destroy()
		return err
	}
	spaceCtx, stopSpace := context.WithCancel(ctx)
	spaceDone := make(chan struct{})
	go func() {
		defer close(spaceDone)
		s.space.Run(spaceCtx)
	}()
	defer func() {
		stopSpace()
		<-spaceDone
	}()

	if err := s.prepareToServe(ctx); err != nil {
		s.chain.GenericAPIServer.Destroy()
		return err
	}
	go s.signalReady(ctx)

	// Scheduled snapshots stop as soon as a stop begins (one in progress
	// is abandoned, leaving no file behind), and end before etcd closes.
	snapshotsCtx, stopSnapshots := context.WithCancel(ctx)
	defer stopSnapshots()
	snapshotsDone := make(chan struct{})
	go func() {
		defer close(snapshotsDone)
		if s.config.snapshots != nil {
			s.config.snapshots.Run(snapshotsCtx)
		}
	}()

	clusterDone := make(chan struct{})
	go func() {
		defer close(clusterDone)
		s.runCluster(ctx)
	}()
	defer func() { <-clusterDone }()

	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	controllersDone := make(chan struct{})
	go func() {
		defer close(controllersDone)
		s.runControllers(ctx)
	}()
	apiDone := make(chan error, 1)
	go func() { apiDone <- s.prepared.Run(apiCtx) }()

	var runErr error
	select {
	case runErr = <-apiDone:
		// The API server stopped by itself: so do the controllers.
		cancel(nil)
		<-controllersDone
	case <-ctx.Done():
		s.config.Options.Notifier.Stopping()
		logger := klog.FromContext(ctx)
		// Controllers stop before the API server drains, so that they
		// finish their requests and release their Lease while it still
		// serves; the manager gives them --controller-shutdown-timeout.
		<-controllersDone
		logger.V(1).Info("Controllers stopped; stopping the API servers")
		stopAPI()
		// The last servers of a cluster to stop find no quorum: nothing
		// that waits on etcd will finish.
		withoutQuorum := s.cluster != nil && !s.config.EmbeddedEtcd.HasLeader()
		runErr = awaitAPIStopped(logger, apiDone, s.chain.GenericAPIServer, withoutQuorum)
	}
	stopSnapshots()
	<-snapshotsDone
	klog.FromContext(ctx).V(1).Info("API servers stopped; stopping storage")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return runErr
}

// prepareToServe writes what must exist before the server serves: the
// admin kubeconfig, and kube-system (see systemnamespace.go).
func (s *Server) prepareToServe(ctx context.Context) error {
	if err := pki.EnsureAdminKubeconfig(s.KubeconfigPath(), s.url, s.PKI()); err != nil {
		return fmt.Errorf("writing admin kubeconfig: %w", err)
	}
	return s.core.ensureSystemNamespace(ctx)
}

// runControllers starts the in-process controllers once the API is ready
// and runs them until ctx is done. The manager acts as
// system:kube-controller-manager; each controller then acts as its own
// service account.
func (s *Server) runControllers(ctx context.Context) {
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
	if err := manager.Run(ctx, s.config.Options.Controllers, config, s.controllers); err != nil {
		logger.Error(err, "Controllers ended with an error")
	}
}

// signalReady closes s.ready once /readyz answers 200 over the loopback
// connection and tells the notifier, which then hears, while /livez says
// so, that the server is live (watchdog); then, once the controllers (if
// any) have synced and the process idles (idle.go), it returns the
// start-up garbage to the OS.
func (s *Server) signalReady(ctx context.Context) {
	client, err := kubernetes.NewForConfig(s.config.APIs.ControlPlane.Generic.LoopbackClientConfig)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot watch readiness")
		return
	}
	loopback := client.Discovery().RESTClient()
	err = wait.PollUntilContextCancel(ctx, readyPollInterval, true, func(ctx context.Context) (bool, error) {
		return healthy(ctx, loopback, "/readyz"), nil
	})
	if err != nil {
		return
	}
	close(s.ready)
	notifier := s.config.Options.Notifier
	notifier.Ready()
	go watchdog(ctx, notifier, func(ctx context.Context) bool { return healthy(ctx, loopback, "/livez") })
	// Start-up builds the OpenAPI documents and bootstraps policy, then
	// the controllers list everything into their informers and work
	// through it: tens of megabytes of garbage, which the runtime would
	// hand back to the OS only slowly. Do it once, when the burst is over.
	if s.controllers != nil {
		select {
		case <-s.controllers.Synced():
		case <-ctx.Done():
			return
		}
	}
	if waitUntilIdle(ctx, processCPUTime, idlePollInterval, idlePolls) {
		debug.FreeOSMemory()
	}
}
