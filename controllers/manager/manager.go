// Package manager starts the enabled in-process controllers of the control
// plane, once per cluster: replicas sharing one etcd elect a leader on a
// Lease and only the leader runs controllers.
package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/featuregate"
	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	"sigs.k8s.io/sample-generic-controlplane/controllers/clusterroleaggregation"
	"sigs.k8s.io/sample-generic-controlplane/controllers/controllercontext"
	"sigs.k8s.io/sample-generic-controlplane/controllers/csrcleaner"
	"sigs.k8s.io/sample-generic-controlplane/controllers/csrsigning"
	"sigs.k8s.io/sample-generic-controlplane/controllers/garbagecollector"
	"sigs.k8s.io/sample-generic-controlplane/controllers/namespace"
	"sigs.k8s.io/sample-generic-controlplane/controllers/resourcequota"
	"sigs.k8s.io/sample-generic-controlplane/controllers/rootcacertpublisher"
	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccount"
	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccounttoken"
	"sigs.k8s.io/sample-generic-controlplane/controllers/storageversionmigrator"
	"sigs.k8s.io/sample-generic-controlplane/controllers/validatingadmissionpolicystatus"
	"sigs.k8s.io/sample-generic-controlplane/features"
)

const (
	// LeaseName is the Lease in kube-system that the manager's replicas elect a leader on.
	LeaseName = "sample-generic-controlplane-controllers"
	// identityNamespace holds the controllers' service accounts.
	identityNamespace = "kube-system"
	// restMapperResetPeriod makes resources of new CRDs visible to the controllers.
	restMapperResetPeriod = 30 * time.Second
)

// Options configure the manager; the flags match kube-controller-manager's.
type Options struct {
	// Controllers is "*" (all enabled by default), "name" or "-name", in any combination.
	Controllers              []string
	ConcurrentGCSyncs        int
	ConcurrentNamespaceSyncs int
	ConcurrentQuotaSyncs     int
	// ResourceQuotaSyncPeriod is how often every quota is recalculated in
	// full; events recalculate a quota at once.
	ResourceQuotaSyncPeriod time.Duration
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA that signs
	// approved kubernetes.io/kube-apiserver-client CSRs.
	ClusterSigningCertFile string
	ClusterSigningKeyFile  string
	ClusterSigningDuration time.Duration
	// ServiceAccountKeyFile signs legacy service-account token secrets.
	ServiceAccountKeyFile string
	// RootCAFile is the CA published in kube-root-ca.crt and token secrets:
	// the one that verifies the API server. Empty: the CA of the manager's
	// own client configuration.
	RootCAFile    string
	LeaderElect   bool
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ControllerShutdownTimeout bounds how long Run takes to return once
	// its context is done; zero waits as long as the controllers take.
	ControllerShutdownTimeout time.Duration
}

// NewOptions returns kube-controller-manager's defaults.
func NewOptions() *Options {
	return &Options{
		Controllers:              []string{"*"},
		ConcurrentGCSyncs:        20,
		ConcurrentNamespaceSyncs: 10,
		ConcurrentQuotaSyncs:     5,
		// kube-controller-manager waits 5 min. Usage comes from in-memory
		// caches, so 30 s is cheap, and it bounds how long a deletion goes
		// unnoticed for a resource the controller does not watch yet (a CRD
		// created seconds before).
		ResourceQuotaSyncPeriod: 30 * time.Second,
		ClusterSigningDuration:  365 * 24 * time.Hour,
		LeaderElect:             true,
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		// kube-controller-manager waits 10 s; the all-in-one control
		// plane stops its API server after the controllers, and the whole
		// stop must stay within 15 s.
		ControllerShutdownTimeout: 5 * time.Second,
	}
}

// controller is one entry of the registry: how to build it from the shared context.
type controller struct {
	name    string
	aliases []string
	// requiredFeatureGates must all be on for the controller to run, as in
	// kube-controller-manager's controller descriptors.
	requiredFeatureGates []featuregate.Feature
	// requiredControllers must all be enabled for the controller to run:
	// it uses what they build (e.g. the garbage collector's caches).
	requiredControllers []string
	build               func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error)
}

// gatedOff returns the first required feature gate that is off, if any.
func (c controller) gatedOff() (featuregate.Feature, bool) {
	for _, g := range c.requiredFeatureGates {
		if !utilfeature.DefaultFeatureGate.Enabled(g) {
			return g, true
		}
	}
	return "", false
}

// missingController returns the first required controller that
// --controllers disables, if any.
func (o *Options) missingController(c controller) (string, bool) {
	for _, name := range c.requiredControllers {
		if !o.Enabled(name) {
			return name, true
		}
	}
	return "", false
}

// runs reports whether the controller runs: --controllers enables it and
// the controllers it needs, and its feature gates are on.
func (o *Options) runs(c controller) bool {
	_, off := c.gatedOff()
	_, missing := o.missingController(c)
	return !off && !missing && o.Enabled(c.name)
}

// registry lists every controller this manager knows, in start order:
// runControllers builds and starts them in this order.
var registry = []controller{
	{name: garbagecollector.Name, aliases: []string{"garbage-collector-controller"}, build: func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error) {
		return garbagecollector.New(ctx, c, o.ConcurrentGCSyncs)
	}},
	{name: namespace.Name, aliases: []string{"namespace-controller"}, build: func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error) {
		return namespace.New(ctx, c, o.ConcurrentNamespaceSyncs)
	}},
	{name: serviceaccount.Name, aliases: []string{"serviceaccount-controller"}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return serviceaccount.New(ctx, c)
	}},
	{name: clusterroleaggregation.Name, aliases: []string{"clusterrole-aggregation-controller"}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return clusterroleaggregation.New(ctx, c)
	}},
	{name: resourcequota.Name, aliases: []string{"resourcequota-controller"}, build: func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error) {
		return resourcequota.New(ctx, c, o.ConcurrentQuotaSyncs, o.ResourceQuotaSyncPeriod)
	}},
	{name: csrsigning.Name, aliases: []string{"certificatesigningrequest-signing-controller"}, build: func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error) {
		return csrsigning.New(ctx, c, o.ClusterSigningCertFile, o.ClusterSigningKeyFile, o.ClusterSigningDuration)
	}},
	{name: csrcleaner.Name, aliases: []string{"certificatesigningrequest-cleaner-controller"}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return csrcleaner.New(ctx, c)
	}},
	{name: serviceaccounttoken.Name, aliases: []string{"serviceaccount-token-controller"}, build: func(ctx context.Context, c *controllercontext.Context, o *Options) (func(context.Context), error) {
		return serviceaccounttoken.New(ctx, c, o.ServiceAccountKeyFile)
	}},
	{name: validatingadmissionpolicystatus.Name, aliases: []string{"validatingadmissionpolicy-status-controller"}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return validatingadmissionpolicystatus.New(ctx, c)
	}},
	{name: rootcacertpublisher.Name, aliases: []string{"root-ca-certificate-publisher-controller"}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return rootcacertpublisher.New(ctx, c)
	}},
	// After the garbage collector: it migrates the objects the collector caches.
	// It migrates what the garbage collector caches. Without the collector
	// kube-controller-manager refuses to start; --controllers=*,-garbagecollector
	// worked here before the migrator existed, so it leaves the migrator
	// out too and says so once.
	{name: storageversionmigrator.Name, aliases: []string{"svm"}, requiredFeatureGates: []featuregate.Feature{kubefeatures.StorageVersionMigrator}, requiredControllers: []string{garbagecollector.Name}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return storageversionmigrator.New(ctx, c)
	}},
	{name: allocation.Name, requiredFeatureGates: []featuregate.Feature{features.KANA}, build: func(ctx context.Context, c *controllercontext.Context, _ *Options) (func(context.Context), error) {
		return allocation.New(ctx, c)
	}},
}

// KnownControllers are the names --controllers accepts (aliases aside).
func KnownControllers() []string {
	var names []string
	for _, c := range registry {
		names = append(names, c.name)
	}
	return names
}

// AddFlags adds the manager's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf(
		"Controllers to run in-process: '*' runs all, 'foo' runs foo, '-foo' disables foo; e.g. '*,-garbagecollector' (which leaves out the storage version migrator too: it needs the collector). Known controllers: %s.",
		strings.Join(KnownControllers(), ", ")))
	fs.IntVar(&o.ConcurrentGCSyncs, "concurrent-gc-syncs", o.ConcurrentGCSyncs, "Number of garbage collector workers.")
	fs.IntVar(&o.ConcurrentNamespaceSyncs, "concurrent-namespace-syncs", o.ConcurrentNamespaceSyncs, "Number of namespaces deleted in parallel.")
	fs.IntVar(&o.ConcurrentQuotaSyncs, "concurrent-resource-quota-syncs", o.ConcurrentQuotaSyncs, "Number of resource quotas synced in parallel.")
	fs.DurationVar(&o.ResourceQuotaSyncPeriod, "resource-quota-sync-period", o.ResourceQuotaSyncPeriod, "How often every resource quota's usage is recalculated in full; changes to a quota and deletions of what it counts are acted on at once.")
	fs.StringVar(&o.ClusterSigningCertFile, "cluster-signing-cert-file", o.ClusterSigningCertFile, "PEM CA certificate that signs approved kubernetes.io/kube-apiserver-client CSRs. Defaults to the cluster CA in --data-dir.")
	fs.StringVar(&o.ClusterSigningKeyFile, "cluster-signing-key-file", o.ClusterSigningKeyFile, "PEM private key of --cluster-signing-cert-file. Defaults to the cluster CA's key in --data-dir.")
	fs.DurationVar(&o.ClusterSigningDuration, "cluster-signing-duration", o.ClusterSigningDuration, "Longest validity of a signed certificate; a CSR's spec.expirationSeconds may ask for less.")
	fs.StringVar(&o.ServiceAccountKeyFile, "service-account-private-key-file", o.ServiceAccountKeyFile, "PEM private key that signs legacy service-account token secrets. Defaults to the service-account signing key in --data-dir.")
	fs.StringVar(&o.RootCAFile, "root-ca-file", o.RootCAFile, "PEM CA published in every namespace (kube-root-ca.crt) and in token secrets. Defaults to the cluster CA in --data-dir, or for the controllers subcommand to the CA in --kubeconfig.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader among replicas sharing one etcd (Lease kube-system/"+LeaseName+") so that each controller runs once.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits after the last renewal before taking over.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often acquisition and renewal are tried.")
	fs.DurationVar(&o.ControllerShutdownTimeout, "controller-shutdown-timeout", o.ControllerShutdownTimeout, "How long a stop waits for the controllers to return and the leader to release its Lease; a controller still running then is left behind, and so is the Lease, which expires. 0 waits as long as they take.")
}

// Validate names the flag and what to write instead.
func (o *Options) Validate() error {
	var errs []error
	known := sets.New(KnownControllers()...)
	for i, c := range canonicalControllers(o.Controllers) {
		if c != "*" && !known.Has(strings.TrimPrefix(c, "-")) {
			errs = append(errs, fmt.Errorf("--controllers: unknown controller %q; write '*', a name or -name, with names from: %s", o.Controllers[i], strings.Join(KnownControllers(), ", ")))
		}
	}
	if o.ConcurrentGCSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-gc-syncs must be at least 1, got %d", o.ConcurrentGCSyncs))
	}
	if o.ConcurrentNamespaceSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-namespace-syncs must be at least 1, got %d", o.ConcurrentNamespaceSyncs))
	}
	if o.ConcurrentQuotaSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-resource-quota-syncs must be at least 1, got %d", o.ConcurrentQuotaSyncs))
	}
	if o.ResourceQuotaSyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--resource-quota-sync-period must be positive, got %s; write e.g. --resource-quota-sync-period=5m", o.ResourceQuotaSyncPeriod))
	}
	if o.ControllerShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--controller-shutdown-timeout must not be negative, got %s; write e.g. --controller-shutdown-timeout=5s", o.ControllerShutdownTimeout))
	}
	if o.ClusterSigningDuration < time.Hour {
		errs = append(errs, fmt.Errorf("--cluster-signing-duration must be at least 1h, got %s", o.ClusterSigningDuration))
	}
	if (o.ClusterSigningCertFile == "") != (o.ClusterSigningKeyFile == "") {
		errs = append(errs, errors.New("--cluster-signing-cert-file and --cluster-signing-key-file go together; set both or neither"))
	}
	// client-go panics on timings it does not accept; refuse them here.
	if o.LeaderElect && !(o.RetryPeriod > 0 && float64(o.RenewDeadline) > leaderelection.JitterFactor*float64(o.RetryPeriod) && o.RenewDeadline < o.LeaseDuration) {
		errs = append(errs, fmt.Errorf("leader election timings: --leader-elect-renew-deadline (%s) must exceed %.1f × --leader-elect-retry-period (%s) and be less than --leader-elect-lease-duration (%s)",
			o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod, o.LeaseDuration))
	}
	return errors.Join(errs...)
}

// Enabled reports whether --controllers enables the named controller, with
// kube-controller-manager's rules (app.IsControllerEnabled): aliases count
// as their controller's name, the first explicit name or -name wins over
// '*', and no controller is disabled by default.
func (o *Options) Enabled(name string) bool {
	return app.IsControllerEnabled(name, nil, canonicalControllers(o.Controllers))
}

// aliases maps each alias (kube-controller-manager's controller names) to
// the name of its controller.
func aliases() map[string]string {
	m := map[string]string{}
	for _, c := range registry {
		for _, a := range c.aliases {
			m[a] = c.name
		}
	}
	return m
}

// canonicalControllers replaces aliases in a --controllers value with the
// names they stand for, keeping '-' and '*', as kube-controller-manager's
// options do before it matches controllers.
func canonicalControllers(controllers []string) []string {
	aliasOf := aliases()
	canonical := make([]string, 0, len(controllers))
	for _, c := range controllers {
		disable := strings.HasPrefix(c, "-")
		name := strings.TrimPrefix(c, "-")
		if n, ok := aliasOf[name]; ok {
			name = n
		}
		if disable {
			name = "-" + name
		}
		canonical = append(canonical, name)
	}
	return canonical
}

// Run runs the enabled controllers until ctx is done; with leader election
// only while this replica leads. rootConfig authenticates the manager itself
// (system:kube-controller-manager): it runs the shared informers and mints
// each controller's service-account credentials, nothing else.
// health, if not nil, receives the state of each controller.
//
// Once ctx is done, Run returns within o.ControllerShutdownTimeout, as
// kube-controller-manager's RunControllers does: by then the controllers have
// returned and the leader has released its Lease, or Run leaves them behind.
// A controller can be stuck where ctx does not reach, e.g. minting its
// credentials in a request that an etcd without quorum never answers. The
// Lease is released only once the controllers have returned; until then
// this replica holds it (renewing it while it can), so no other replica's
// controllers start while this one's may still write.
func Run(ctx context.Context, o *Options, rootConfig *rest.Config, health *Health) error {
	pending := &pendingWork{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, rootConfig, health, pending) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if o.ControllerShutdownTimeout == 0 {
		return <-done
	}
	timer := time.NewTimer(o.ControllerShutdownTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("still stopping %s after the stop began (--controller-shutdown-timeout); left behind: %s", o.ControllerShutdownTimeout, strings.Join(pending.list(), ", "))
	}
}

func run(ctx context.Context, o *Options, rootConfig *rest.Config, health *Health, pending *pendingWork) error {
	logger := klog.FromContext(ctx)
	if !slices.ContainsFunc(registry, o.runs) {
		// Leading with nothing to run would keep the Lease from a
		// replica (or a controllers process) that has controllers.
		logger.Info("No controllers enabled; not taking part in leader election")
		<-ctx.Done()
		return nil
	}
	rootClient, err := kubernetes.NewForConfig(rootConfig)
	if err != nil {
		return err
	}
	// The replica's identity: its Lease holder identity, and the host of
	// the events its controllers record.
	hostname, _ := os.Hostname()
	id := hostname + "_" + string(uuid.NewUUID())
	if !o.LeaderElect {
		return runControllers(ctx, o, id, rootConfig, rootClient, health, pending)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: identityNamespace, Name: LeaseName},
		Client:     rootClient.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	// Campaign until ctx ends: a replica that loses leadership (e.g. it
	// could not renew in time) stops its controllers and campaigns again,
	// instead of living on without controllers.
	for {
		campaign(ctx, o, lock, id, func(ctx context.Context) error {
			defer pending.add(leaseRelease) // campaign releases it next
			return runControllers(ctx, o, id, rootConfig, rootClient, health, pending)
		})
		pending.remove(leaseRelease)
		if ctx.Err() != nil {
			return nil
		}
		logger.Info("Lost leadership; campaigning again", "identity", id)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.RetryPeriod):
		}
	}
}

// campaign runs one leadership term: it waits to lead, runs controllers
// while leading, and returns once leadership ended and the controllers have
// stopped. The lease is released only after they stopped (on shutdown, or
// when they fail), so another replica never overlaps with them.
func campaign(ctx context.Context, o *Options, lock resourcelock.Interface, id string, run func(context.Context) error) {
	logger := klog.FromContext(ctx)
	// The election has a context of its own: ending ctx must first stop
	// the controllers, and only then cancel the election, which releases
	// the lease (ReleaseOnCancel).
	electionCtx, cancelElection := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelElection()
	term := &leadershipTerm{}
	// A replica that is not leading stops campaigning as soon as ctx ends.
	stopFollowing := context.AfterFunc(ctx, func() {
		if !term.leading() {
			cancelElection()
		}
	})
	defer stopFollowing()
	leaderelection.RunOrDie(electionCtx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadingCtx context.Context) {
				done, ok := term.begin()
				if !ok {
					return
				}
				defer close(done)
				// Controllers stop when leadership is lost or ctx ends.
				runCtx, stopRun := context.WithCancel(leadingCtx)
				defer stopRun()
				defer context.AfterFunc(ctx, stopRun)()
				logger.Info("Leading; starting controllers", "identity", id)
				if err := run(runCtx); err != nil {
					logger.Error(err, "Controllers failed; giving up leadership", "identity", id)
				}
				cancelElection()
			},
			OnStoppedLeading: func() { logger.Info("Leadership ended", "identity", id) },
		},
	})
	// RunOrDie returns without waiting for OnStartedLeading.
	term.end()
}

// leaseRelease is what pendingWork calls the release of the Lease.
const leaseRelease = "the release of Lease kube-system/" + LeaseName

// pendingWork names what a stop still waits for: the controllers that have
// not returned or not finished starting, and the release of the Lease.
type pendingWork struct {
	mu    sync.Mutex
	names sets.Set[string]
}

func (p *pendingWork) add(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names == nil {
		p.names = sets.New[string]()
	}
	p.names.Insert(name)
}

func (p *pendingWork) remove(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names.Delete(name)
}

// list returns the names in order.
func (p *pendingWork) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return sets.List(p.names)
}

// leadershipTerm hands the controllers of one term from client-go's
// leader-election goroutine to Run, which waits for them to stop.
type leadershipTerm struct {
	mu    sync.Mutex
	ended bool
	done  chan struct{}
}

// leading reports whether the term's controllers have started.
func (t *leadershipTerm) leading() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done != nil
}

// begin registers the term's controllers; false once the term has ended
// (then they must not start).
func (t *leadershipTerm) begin() (chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, false
	}
	t.done = make(chan struct{})
	return t.done, true
}

// end closes the term and waits for its controllers, if they started.
func (t *leadershipTerm) end() {
	t.mu.Lock()
	t.ended = true
	done := t.done
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}

func runControllers(ctx context.Context, o *Options, id string, rootConfig *rest.Config, rootClient kubernetes.Interface, health *Health, pending *pendingWork) error {
	logger := klog.FromContext(ctx)
	c, metadataInformers, err := newContext(ctx, o, id, rootConfig, rootClient)
	if err != nil {
		for _, entry := range registry {
			if o.runs(entry) {
				health.failed(entry.name, "cannot start", err)
			}
		}
		return err
	}
	// A slice, not a map: controllers start in registry order.
	type namedRun struct {
		name string
		run  func(context.Context)
	}
	var runs []namedRun
	for _, entry := range registry {
		if ctx.Err() != nil {
			// Stopped while starting (a start can wait long on an API
			// server whose etcd does not answer): start no more.
			return nil
		}
		if gate, off := entry.gatedOff(); off {
			logger.Info("Controller disabled by a feature gate", "controller", entry.name, "featureGate", gate)
			continue
		}
		if !o.Enabled(entry.name) {
			logger.Info("Controller disabled", "controller", entry.name)
			continue
		}
		if needed, missing := o.missingController(entry); missing {
			logger.Info("Controller not started: it needs a controller that --controllers disables", "controller", entry.name, "needs", needed)
			continue
		}
		starting := entry.name + " (starting)"
		pending.add(starting)
		run, err := entry.build(ctx, c, o)
		pending.remove(starting)
		if err != nil {
			// One broken controller must not stop the others.
			logger.Error(err, "Controller cannot start", "controller", entry.name)
			health.failed(entry.name, "cannot start", err)
			continue
		}
		if run == nil { // not configured to do anything; it said why
			continue
		}
		runs = append(runs, namedRun{entry.name, run})
		health.set(entry.name, nil)
		logger.V(2).Info("Controller started", "controller", entry.name)
	}
	c.InformerFactory.Start(ctx.Done())
	defer c.InformerFactory.Shutdown()
	defer metadataInformers.Shutdown()
	c.ObjectOrMetadataInformerFactory.Start(ctx.Done())
	close(c.InformersStarted)

	var wg sync.WaitGroup
	for _, r := range runs {
		pending.add(r.name)
		wg.Go(func() {
			defer pending.remove(r.name)
			r.run(ctx)
			if ctx.Err() == nil {
				health.failed(r.name, "stopped", errors.New("the controller returned while the manager runs"))
			}
		})
	}
	wg.Wait()
	return nil
}

func newContext(ctx context.Context, o *Options, id string, rootConfig *rest.Config, rootClient kubernetes.Interface) (*controllercontext.Context, metadatainformer.SharedInformerFactory, error) {
	informerConfig := rest.CopyConfig(rootConfig)
	informerConfig.QPS = -1
	metadataClient, err := metadata.NewForConfig(informerConfig)
	if err != nil {
		return nil, nil, err
	}
	informerClient, err := kubernetes.NewForConfig(informerConfig)
	if err != nil {
		return nil, nil, err
	}
	typed := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informers.WithTransform(controllercontext.TrimManagedFields))
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(rootClient.Discovery()))
	go wait.Until(restMapper.Reset, restMapperResetPeriod, ctx.Done())
	rootCA := rootConfig.CAData
	if o.RootCAFile != "" {
		if rootCA, err = os.ReadFile(o.RootCAFile); err != nil {
			return nil, nil, fmt.Errorf("--root-ca-file: %w", err)
		}
	}
	metadataInformers := metadatainformer.NewSharedInformerFactoryWithOptions(metadataClient, 0, metadatainformer.WithTransform(controllercontext.TrimManagedFields))
	return &controllercontext.Context{
		ClientBuilder:                   clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(rootConfig), rootClient.CoreV1(), identityNamespace),
		InformerFactory:                 typed,
		ObjectOrMetadataInformerFactory: informerfactory.NewInformerFactory(typed, metadataInformers),
		RESTMapper:                      restMapper,
		InformersStarted:                make(chan struct{}),
		RootCA:                          rootCA,
		RootClient:                      rootClient,
		ReplicaIdentity:                 id,
	}, metadataInformers, nil
}
