package controlplane

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	cpadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	genericserver "k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic/server"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"

	"sigs.k8s.io/sample-generic-controlplane/controllers/resourcequota"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

// mutexProfileFraction samples one in this many mutex contention events
// under --contention-profiling, enough to see where the time goes at little
// cost.
const mutexProfileFraction = 5

// enableMutexProfile turns on the mutex profile (/debug/pprof/mutex) with
// --profiling and --contention-profiling. Upstream's flag turns on the block
// profile only; the mutex profile is the other half of contention, and with
// one process for the API server, etcd and the controllers, the one that
// shows who waits on whose locks.
func enableMutexProfile(f *genericoptions.FeatureOptions) {
	if f != nil && f.EnableProfiling && f.EnableContentionProfiling {
		goruntime.SetMutexProfileFraction(mutexProfileFraction)
	}
}

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
	// snapshots takes the scheduled snapshots of the embedded etcd; nil
	// when none are scheduled or etcd is external.
	snapshots *snapshot.Scheduler
}

// NewConfig builds the configuration of every server in the chain. Like
// upstream's, it needs the secure port bound (CompletedOptions.Listen) and
// a reachable etcd (the storage factory talks to it): etcd is the started
// embedded member (nil with --etcd-servers), which elects itself while the
// configuration is built. NewConfig returns once both are done. With
// --etcd-servers it first checks the TLS to the external etcd
// (checkExternalEtcd).
func NewConfig(ctx context.Context, opts CompletedOptions, etcd *embeddedetcd.Server) (*Config, error) {
	if _, ok := opts.ControlPlane.SecureServing.Listener.(*servingListener); !ok {
		return nil, errors.New("the secure port is not bound: call CompletedOptions.Listen before NewConfig")
	}
	if (opts.EmbeddedEtcd != nil) != (etcd != nil) {
		return nil, errors.New("the embedded etcd member must be given exactly when the options ask for one: pass what CompletedOptions.StartEtcd returned")
	}
	if etcd == nil {
		if err := checkExternalEtcd(ctx, opts.ControlPlane.Etcd.StorageConfig.Transport); err != nil {
			return nil, err
		}
	}
	logger := klog.FromContext(ctx)
	etcdReady := make(chan error, 1)
	readyCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	if etcd != nil {
		go func() { etcdReady <- opts.settleEtcd(readyCtx, etcd) }()
	} else {
		etcdReady <- nil
	}

	start := time.Now()
	enableMutexProfile(opts.ControlPlane.Features)
	// Upstream's sample assumes three API servers; with more than one, a
	// new CRD waits 5 s before it is Established so the others can catch
	// up. Nobody else can reach the embedded etcd: this server is the only one.
	apiServerCount := 3
	if etcd != nil && !etcd.Clustered() {
		apiServerCount = 1
	}
	apis, err := newAPIsConfig(opts, apiServerCount)
	if err != nil {
		// The member is not waited for: its owner closes it.
		stopWaiting()
		<-etcdReady
		return nil, fmt.Errorf("configuring the API servers: %w", err)
	}
	logger.V(1).Info("API servers configured", "duration", time.Since(start))
	if err := <-etcdReady; err != nil {
		return nil, err
	}
	return &Config{Options: opts, APIs: apis, EmbeddedEtcd: etcd}, nil
}

// Complete fills in the fields derived from others.
func (c *Config) Complete() (CompletedConfig, error) {
	apis, err := c.APIs.Complete()
	if err != nil {
		return CompletedConfig{}, err
	}
	var snapshots *snapshot.Scheduler
	// NewConfig was given the member exactly when the options have one.
	if opts := c.Options.EmbeddedEtcd; c.EmbeddedEtcd != nil && opts.SnapshotSchedule != "" {
		snapshots, err = snapshot.NewScheduler(c.Options.DataDir.Path, c.EmbeddedEtcd.ClientURL(), opts.SnapshotSchedule, opts.SnapshotRetention)
		if err != nil {
			return CompletedConfig{}, err
		}
	}
	return CompletedConfig{&completedConfig{Options: c.Options, APIs: apis, EmbeddedEtcd: c.EmbeddedEtcd, snapshots: snapshots}}, nil
}

// DefaultResources are the generic resources the binary serves: upstream's
// generic set, and storagemigration.k8s.io/v1, as kube-apiserver serves it.
func DefaultResources() *serverstorage.ResourceConfig {
	resources := controlplane.DefaultGenericAPIResourceConfigSource()
	// Storage version migrations rewrite stored objects of any resource,
	// custom ones included: generic. kube-apiserver serves v1 by default
	// since 1.37; upstream's generic resource configuration does not list
	// it, though its storage is among the generic providers. The gate off,
	// that storage serves nothing (and warns), so it is not enabled then.
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.StorageVersionMigrator) {
		resources.EnableVersions(svmv1.SchemeGroupVersion)
	}
	return resources
}

// newAPIsConfig configures the three servers of the chain as upstream's
// generic sample does (genericserver.NewConfig), serving the resources the
// options choose and the API groups added to them: their versions in the
// resource configuration (unless their feature gate is off), their types
// in the scheme and their OpenAPI definitions beside the built-in ones.
// apiServerCount is how many API servers share the storage.
func newAPIsConfig(o CompletedOptions, apiServerCount int) (*genericserver.Config, error) {
	opts := o.ControlPlane
	resources := o.Resources()
	for _, g := range o.APIGroups {
		if !g.gatedOff() {
			resources.EnableVersions(g.groupVersions()...)
		}
	}
	// The token authenticator reads service accounts through the loopback
	// client when its informer lags (tokengetter.go); the client exists once
	// the configuration is built.
	var loopback lateClient
	opts.Authentication.ServiceAccounts.OptionalTokenGetter = newServiceAccountGetter(&loopback)
	genericConfig, versionedInformers, storageFactory, err := controlplaneapiserver.BuildGenericConfig(
		opts,
		[]*runtime.Scheme{legacyscheme.Scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme},
		resources,
		openAPIDefinitions(o.APIGroups),
		// No informer name: names are unique per process, and tests run
		// several control planes in one (upstream's generic sample passes
		// none either; it only labels informer metrics).
		nil,
	)
	if err != nil {
		return nil, err
	}
	if err := checkServed(genericConfig.MergedResourceConfig, opts.Admission.GenericAdmission); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(genericConfig.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	loopback.set(kube)
	if o.EmbeddedEtcd != nil {
		// Servers join this one's cluster with join tokens (and are told
		// to restart it with --cluster-init when its member runs alone).
		genericConfig.Authentication.Authenticator = cluster.JoinTokenAuthenticator(kube, genericConfig.Authentication.Authenticator)
	}
	// Upstream names the API server after its host alone, so replicas on
	// one host would share an identity and fight over its Lease. Set ours
	// before anything that keeps it is configured: the identity Lease, the
	// peer proxy and admission read it from here on. What BuildGenericConfig
	// gave the host's ID to only labels metrics (authentication,
	// authorization and encryption config) and traces.
	if genericConfig.APIServerID != "" { // the APIServerIdentity gate is on
		if genericConfig.APIServerID, err = apiServerID(opts.SecureServing.Listener.Addr()); err != nil {
			return nil, err
		}
	}
	for _, g := range o.APIGroups {
		if g.gatedOff() {
			// Not even --runtime-config=api/all=true serves it with the
			// gate off (enabling it by name is refused in validation).
			genericConfig.MergedResourceConfig.DisableVersions(g.groupVersions()...)
		}
		if !g.Protobuf {
			// Stored as JSON, as custom resources are.
			for _, resource := range g.Resources {
				storageFactory.SetSerializer(schema.GroupResource{Group: g.Name, Resource: resource}, runtime.ContentTypeJSON, legacyscheme.Codecs)
			}
		}
	}
	// One resolver of service references for the aggregator, admission
	// webhooks and CRD conversion webhooks: ServiceLocations, else DNS.
	serviceResolver, err := newServiceResolver(genericConfig.LoopbackClientConfig, genericConfig.MergedResourceConfig, versionedInformers)
	if err != nil {
		return nil, err
	}
	// Quota admission enforces what our quota controller calculates: the
	// same evaluators (upstream's are for kube-apiserver, with pods,
	// services and volumes, and their usage would never be calculated).
	// Initializers run in order, so this one's configuration is the one
	// the plugin keeps.
	quotaConfig, err := resourcequota.NewConfiguration(nil)
	if err != nil {
		return nil, err
	}
	quotaInitializer := cpadmission.NewPluginInitializer(quotaConfig, exclusion.Excluded())
	kubeAPIs, pluginInitializer, err := controlplaneapiserver.CreateConfig(opts, genericConfig, versionedInformers,
		nil, // no EndpointSlices to route peer requests by
		storageFactory, serviceResolver, []admission.PluginInitializer{quotaInitializer})
	if err != nil {
		return nil, err
	}
	authInfoResolver := webhook.NewDefaultAuthenticationInfoResolverWrapper(kubeAPIs.ProxyTransport, kubeAPIs.Generic.EgressSelector, kubeAPIs.Generic.LoopbackClientConfig, kubeAPIs.Generic.TracerProvider)
	apiExtensions, err := controlplaneapiserver.CreateAPIExtensionsConfig(*kubeAPIs.Generic, kubeAPIs.VersionedInformers, pluginInitializer, opts, apiServerCount, serviceResolver, authInfoResolver)
	if err != nil {
		return nil, err
	}
	aggregator, err := controlplaneapiserver.CreateAggregatorConfig(*kubeAPIs.Generic, opts, kubeAPIs.VersionedInformers, serviceResolver, kubeAPIs.ProxyTransport, kubeAPIs.Extra.PeerProxy, pluginInitializer)
	if err != nil {
		return nil, err
	}
	// There are no Services to check remote APIServices' availability through.
	aggregator.ExtraConfig.DisableRemoteAvailableConditionController = true
	return &genericserver.Config{Options: opts, ControlPlane: kubeAPIs, APIExtensions: apiExtensions, Aggregator: aggregator}, nil
}
