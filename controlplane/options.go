package controlplane

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/metrics"
	cpoptions "k8s.io/kubernetes/pkg/controlplane/apiserver/options"
	genericserver "k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic/server"
	"k8s.io/kubernetes/pkg/kubeapiserver"
	authzmodes "k8s.io/kubernetes/pkg/kubeapiserver/authorizer/modes"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/bootstrap"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

const (
	// DefaultSecurePort is where the API is served unless --secure-port says otherwise.
	DefaultSecurePort = 6443
	// DefaultBindAddress keeps the API on loopback unless asked otherwise.
	DefaultBindAddress = "127.0.0.1"
	// DefaultServiceAccountIssuer is the "iss" of tokens this control plane issues.
	DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
)

// Options are everything a control plane is configured with: the upstream
// generic apiserver options plus our own.
type Options struct {
	// ControlPlane are the generic kube-apiserver options
	// (k8s.io/kubernetes/pkg/controlplane/apiserver/options), with the
	// defaults of a local, safe control plane.
	ControlPlane *cpoptions.Options

	// DataDir holds etcd's data, the PKI and admin.kubeconfig.
	DataDir string
	// TLSSANs are extra DNS names and IPs for the serving certificate.
	TLSSANs []string
	// EmbeddedEtcd tunes the etcd member started when no --etcd-servers are
	// given. Nil: this control plane has no embedded etcd, and
	// --etcd-servers is required.
	EmbeddedEtcd *EmbeddedEtcdOptions
	// Controllers configure the in-process controllers; AddControllers adds
	// a program's own. Nil: this control plane runs no controllers.
	Controllers *manager.Options
	// Resources returns the generic resources served unless --runtime-config
	// says otherwise; nil serves DefaultResources. Set it to serve fewer,
	// e.g. no quotas, certificates or admission configuration; the API
	// server itself needs namespaces, service accounts, secrets and config
	// maps (NewConfig fails, naming them, otherwise). CustomResourceDefinitions and
	// APIServices are served by servers of their own in the chain
	// (--runtime-config=apiextensions.k8s.io/v1=false turns CRDs off).
	Resources func() *serverstorage.ResourceConfig
	// EtcdSpaceCheckInterval is how often the control plane asks etcd for
	// its database size and alarms (space.go); zero is
	// maintenance.DefaultSpaceInterval. Tests that fill a database
	// shorten it.
	EtcdSpaceCheckInterval time.Duration
	// Notifier hears the start-up's long phases, readiness, the stop and,
	// when it asks, the server's liveness: e.g. sdnotify.FromEnvironment
	// for a systemd unit of Type=notify. Nil tells no one.
	Notifier Notifier

	// Added by the extension points (extensions.go).
	apiGroups  []APIGroup
	bootstraps []bootstrap.Bootstrap
}

// EmbeddedEtcdOptions tune the in-process etcd member.
type EmbeddedEtcdOptions struct {
	QuotaBackendBytes int64
	LogLevel          string
	// SnapshotSchedule is when to take snapshots of the member into
	// <data-dir>/snapshots, in cron syntax; empty takes none.
	SnapshotSchedule string
	// SnapshotRetention is how many scheduled snapshots are kept.
	SnapshotRetention int
	// Cluster makes the member one of a cluster of servers.
	Cluster ClusterOptions
}

// NewOptions returns options with the defaults of the binary: embedded etcd,
// loopback only, RBAC, certificates under the default data dir.
func NewOptions() *Options {
	// The upstream generic sample's options already switch off the
	// admission plugins that need pods or nodes and read service accounts
	// without them; we start from there.
	cp := genericserver.NewOptions()
	cp.SecureServing.BindAddress = net.ParseIP(DefaultBindAddress)
	cp.SecureServing.BindPort = DefaultSecurePort
	// Port 0 asks Listen for a free port, which the admin kubeconfig and
	// Server.URL then name. Upstream's validation refuses 0 when serving is
	// Required (it would mean "no HTTPS"); Listen always creates the
	// listener, so serving never turns off here.
	cp.SecureServing.Required = false
	cp.SecureServing.ServerCert.CertDirectory = ""
	cp.Authorization.Modes = []string{authzmodes.ModeRBAC}
	cp.Etcd.StorageConfig.Transport.ServerList = nil
	// A stop ends watches, gracefully, within this time. With upstream's 0
	// it leaves them open, and the HTTP server's shutdown waits for them
	// until it times out.
	cp.GenericServerRunOptions.ShutdownWatchTerminationGracePeriod = 2 * time.Second
	return &Options{
		ControlPlane: cp,
		DataDir:      DefaultDataDir(),
		EmbeddedEtcd: &EmbeddedEtcdOptions{
			QuotaBackendBytes: embeddedetcd.DefaultQuotaBackendBytes,
			LogLevel:          "warn",
			SnapshotSchedule:  snapshot.DefaultSchedule,
			SnapshotRetention: snapshot.DefaultRetention,
			Cluster:           ClusterOptions{PeerPort: DefaultEtcdPeerPort, LearnerTimeout: cluster.DefaultLearnerTimeout},
		},
		Controllers: manager.NewOptions(),
		// Built in: the resolver of service references reads them.
		apiGroups: []APIGroup{serviceLocationsGroup()},
	}
}

// DefaultDataDir is $XDG_DATA_HOME/sample-generic-controlplane, falling back
// to ~/.local/share/sample-generic-controlplane.
func DefaultDataDir() string {
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" {
		return filepath.Join(dir, "sample-generic-controlplane")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "sample-generic-controlplane")
	}
	return ".sample-generic-controlplane"
}

// AddFlags adds the upstream flag sets and ours, each in its named section.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	o.ControlPlane.AddFlags(fss)
	if f := fss.FlagSet("etcd").Lookup("etcd-servers"); f != nil && o.EmbeddedEtcd != nil {
		f.Usage += " Leave empty (the default) to run an embedded etcd member under --data-dir."
	}
	if f := fss.FlagSet("secure serving").Lookup("secure-port"); f != nil {
		// Upstream's text for a port that is not Required says 0 turns HTTPS off.
		f.Usage = "The port on which to serve HTTPS with authentication and authorization. 0 picks a free port, which admin.kubeconfig and the ready message name."
	}

	fs := fss.FlagSet("control plane")
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory holding the embedded etcd data (etcd/), the certificates and keys (pki/) and admin.kubeconfig. Created with mode 0700. Defaults to $XDG_DATA_HOME/sample-generic-controlplane or ~/.local/share/sample-generic-controlplane.")
	fs.StringSliceVar(&o.TLSSANs, "tls-san", o.TLSSANs, "Extra DNS names or IP addresses for the generated serving certificate, beside localhost, 127.0.0.1, ::1 and --bind-address.")

	if o.Controllers != nil {
		o.Controllers.AddFlags(fss.FlagSet("controllers"))
	}
	if o.EmbeddedEtcd == nil {
		return
	}
	efs := fss.FlagSet("embedded etcd")
	efs.Int64Var(&o.EmbeddedEtcd.QuotaBackendBytes, "embedded-etcd-quota-bytes", o.EmbeddedEtcd.QuotaBackendBytes, "Size in bytes at which the embedded etcd database stops accepting writes. Ignored with --etcd-servers.")
	efs.StringVar(&o.EmbeddedEtcd.LogLevel, "embedded-etcd-log-level", o.EmbeddedEtcd.LogLevel, "Log level of the embedded etcd: debug, info, warn or error. Ignored with --etcd-servers.")
	efs.StringVar(&o.EmbeddedEtcd.SnapshotSchedule, "embedded-etcd-snapshot-schedule", o.EmbeddedEtcd.SnapshotSchedule, "When to take a snapshot of the embedded etcd into <data-dir>/snapshots: a cron schedule in the machine's time zone (5 fields, or @daily, @every 6h, ...; prefix CRON_TZ=UTC for another zone). Empty takes none. Ignored with --etcd-servers.")
	efs.IntVar(&o.EmbeddedEtcd.SnapshotRetention, "embedded-etcd-snapshot-retention", o.EmbeddedEtcd.SnapshotRetention, "How many scheduled snapshots to keep; the oldest beyond it are deleted after each new one. Other files in <data-dir>/snapshots are never deleted. Ignored with --etcd-servers.")
	o.EmbeddedEtcd.Cluster.addFlags(fss.FlagSet("cluster"))
}

// Embedded reports whether the control plane runs its own etcd member.
func (o *Options) Embedded() bool {
	return o.EmbeddedEtcd != nil && len(o.ControlPlane.Etcd.StorageConfig.Transport.ServerList) == 0
}

// Validate checks our own options, before anything is written to disk.
// Upstream's options are validated once completed (CompletedOptions.Validate).
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty; write e.g. --data-dir=$HOME/.local/share/sample-generic-controlplane"))
	}
	if o.EmbeddedEtcd == nil && len(o.ControlPlane.Etcd.StorageConfig.Transport.ServerList) == 0 {
		errs = append(errs, errors.New("--etcd-servers is required: this control plane has no embedded etcd; write e.g. --etcd-servers=https://127.0.0.1:2379"))
	}
	if o.EmbeddedEtcd != nil {
		errs = append(errs, o.EmbeddedEtcd.validate()...)
		errs = append(errs, o.validateCluster()...)
	}
	for _, server := range o.ControlPlane.Etcd.StorageConfig.Transport.ServerList {
		if err := validateEtcdServer(server); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Controllers != nil {
		if err := o.Controllers.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	// ApplyToProcess applies them, and Complete leaves them out of the
	// completed options (see applyMetrics).
	errs = append(errs, o.ControlPlane.Metrics.Validate()...)
	for _, g := range o.apiGroups {
		if !g.gatedOff() {
			continue
		}
		for key, value := range o.ControlPlane.APIEnablement.RuntimeConfig {
			if strings.HasPrefix(key, g.Name+"/") && value != "false" {
				errs = append(errs, fmt.Errorf("--runtime-config=%s enables %s, which the %s feature gate turns off: add --feature-gates=%s=true, or drop %s from --runtime-config", key, g.Name, g.FeatureGate, g.FeatureGate, key))
			}
		}
	}
	for _, san := range o.TLSSANs {
		if net.ParseIP(san) == nil && len(validation.IsDNS1123Subdomain(san)) > 0 && len(validation.IsWildcardDNS1123Subdomain(san)) > 0 {
			errs = append(errs, fmt.Errorf("--tls-san %q is neither an IP address nor a DNS name; write e.g. --tls-san=cp.example.com or --tls-san=192.0.2.10", san))
		}
	}
	return utilerrors.NewAggregate(errs)
}

func (o *EmbeddedEtcdOptions) validate() []error {
	var errs []error
	if o.QuotaBackendBytes <= 0 {
		errs = append(errs, fmt.Errorf("--embedded-etcd-quota-bytes must be positive, got %d; write e.g. --embedded-etcd-quota-bytes=%d", o.QuotaBackendBytes, embeddedetcd.DefaultQuotaBackendBytes))
	}
	if o.SnapshotSchedule != "" {
		if _, err := snapshot.ParseSchedule(o.SnapshotSchedule); err != nil {
			errs = append(errs, err)
		}
		if o.SnapshotRetention < 1 {
			errs = append(errs, fmt.Errorf("--embedded-etcd-snapshot-retention must be at least 1, got %d; write e.g. --embedded-etcd-snapshot-retention=%d, or --embedded-etcd-snapshot-schedule=\"\" to take no scheduled snapshots", o.SnapshotRetention, snapshot.DefaultRetention))
		}
	}
	return errs
}

func validateEtcdServer(server string) error {
	u, err := url.Parse(server)
	hint := "write e.g. --etcd-servers=https://127.0.0.1:2379, or leave it empty for the embedded etcd"
	if err != nil {
		return fmt.Errorf("--etcd-servers: %q is not a URL (%v); %s", server, err, hint)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("--etcd-servers: %q has no host; %s", server, hint)
		}
		if _, port, err := net.SplitHostPort(u.Host); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("--etcd-servers: %q has an invalid port %q; %s", server, port, hint)
			}
		}
	case "unix", "unixs":
		if u.Host+u.Path == "" {
			return fmt.Errorf("--etcd-servers: %q names no socket; %s", server, hint)
		}
	default:
		return fmt.Errorf("--etcd-servers: %q must start with https://, http://, unix:// or unixs://; %s", server, hint)
	}
	return nil
}

// PrepareDataDir takes the data dir for this process: it creates it, locks
// it, prepares the member's place in a cluster (PrepareMembership: for
// --join, a dry run that places the cluster's shared credentials in it,
// changing nothing in the cluster), creates or loads the PKI (for the
// serving certificate's names: the bind address, --tls-san; for the etcd
// member's peer address) and, for an embedded etcd, chooses its socket.
// Close the returned handle once the control plane has stopped.
func (o *Options) PrepareDataDir(ctx context.Context) (*datadir.Dir, error) {
	d, err := datadir.Lock(o.DataDir)
	if err != nil {
		return nil, err
	}
	hosts, err := o.PrepareMembership(ctx, d)
	if err != nil {
		d.Close()
		return nil, err
	}
	if err := d.EnsurePKI(hosts); err != nil {
		d.Close()
		return nil, err
	}
	if o.Embedded() {
		if err := d.ChooseEtcdSocket(); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// CompletedOptions are options with every default filled in, from the
// prepared data dir among others.
type CompletedOptions struct {
	*completedOptions
}

type completedOptions struct {
	ControlPlane cpoptions.CompletedOptions
	// DataDir is the prepared data dir; it stays its caller's to close.
	DataDir *datadir.Dir
	// Membership is the embedded member's place in a cluster of servers;
	// nil when it runs alone or etcd is external, and until Join for a
	// server that joins.
	Membership *embeddedetcd.Membership
	// joinPlan is the join Join makes; nil unless this start joins.
	joinPlan *joinPlan
	// EmbeddedEtcd is nil with an external etcd.
	EmbeddedEtcd *EmbeddedEtcdOptions
	// Controllers is nil when the control plane runs none.
	Controllers *manager.Options
	Resources   func() *serverstorage.ResourceConfig
	APIGroups   []APIGroup
	Bootstraps  []bootstrap.Bootstrap
	// EtcdSpaceCheckInterval is Options.EtcdSpaceCheckInterval.
	EtcdSpaceCheckInterval time.Duration
	// Notifier is Options.Notifier, or one that tells no one.
	Notifier Notifier
}

// Complete fills in every default: the certificates, keys and CAs of the
// data dir's PKI where no flag names others, the embedded etcd's socket as
// the etcd server, and the controllers' settings derived from both; then it
// completes upstream's options, which read the certificate files (as
// upstream's MaybeDefaultWithSelfSignedCerts expects them written in its
// Complete). It leaves o as it was.
func (o *Options) Complete(ctx context.Context, dataDir *datadir.Dir) (CompletedOptions, error) {
	resources := o.Resources
	if resources == nil {
		resources = DefaultResources
	}
	c := &completedOptions{DataDir: dataDir, Resources: resources,
		APIGroups: slices.Clone(o.apiGroups), Bootstraps: slices.Clone(o.bootstraps),
		EtcdSpaceCheckInterval: o.EtcdSpaceCheckInterval, Notifier: notifierOf(o.Notifier)}
	if o.Embedded() {
		c.EmbeddedEtcd = o.EmbeddedEtcd
		m, err := dataDir.Membership()
		if err != nil {
			return CompletedOptions{}, err
		}
		c.Membership = m
		if join := o.EmbeddedEtcd.Cluster.Join; m == nil && join != "" {
			peerURL, err := o.peerURL()
			if err != nil {
				return CompletedOptions{}, err
			}
			c.joinPlan = &joinPlan{server: join, peerURL: peerURL}
		}
	}
	if err := o.complete(ctx, c); err != nil {
		return CompletedOptions{}, err
	}
	return CompletedOptions{c}, nil
}

// completeControllers returns a copy of the controllers' options with the
// defaults that come from the PKI and the server's own settings.
func (o *Options) completeControllers(creds *pki.PKI, servingCertFile, serviceAccountKeyFile string, clustered bool) *manager.Options {
	controllers := *o.Controllers
	if controllers.ClusterSigningCertFile == "" && controllers.ClusterSigningKeyFile == "" {
		controllers.ClusterSigningCertFile, controllers.ClusterSigningKeyFile = creds.CA.CertFile, creds.CA.KeyFile
	}
	// The manager talks over the loopback connection, whose CA is not the
	// one to publish: publish the cluster CA, unless the user serves with a
	// certificate of their own (then only they know; --root-ca-file).
	if controllers.RootCAFile == "" && servingCertFile == creds.ServingCertFile {
		controllers.RootCAFile = creds.CA.CertFile
	}
	// With an embedded etcd that runs alone no other replica can exist
	// (its socket is private), so there is nobody to elect against;
	// skipping the election also spares a restart after a crash the wait
	// for the old lease. Servers whose members form a cluster share the
	// controllers' Lease.
	if o.Embedded() && !clustered {
		controllers.LeaderElect = false
	}
	if controllers.ServiceAccountKeyFile == "" {
		controllers.ServiceAccountKeyFile = serviceAccountKeyFile
	}
	return &controllers
}

func (o *Options) complete(ctx context.Context, c *completedOptions) error {
	cp := copyForCompletion(o.ControlPlane)
	cp.Admission = withoutAdmissionOfUnserved(cp.Admission, c.Resources())
	creds := c.DataDir.PKI
	if o.Embedded() {
		if c.DataDir.EtcdSocket == "" {
			return fmt.Errorf("data dir %s was prepared for an external etcd, and the options ask for the embedded one", c.DataDir.Path)
		}
		cp.Etcd.StorageConfig.Transport.ServerList = []string{"unix://" + c.DataDir.EtcdSocket}
		// A joined server encrypts as its cluster does (join).
		if encryption := c.DataDir.EncryptionConfig(); cp.Etcd.EncryptionProviderConfigFilepath == "" && encryption != "" {
			cp.Etcd.EncryptionProviderConfigFilepath = encryption
		}
	}

	serving := &cp.SecureServing.ServerCert.CertKey
	if serving.CertFile == "" && serving.KeyFile == "" {
		serving.CertFile, serving.KeyFile = creds.ServingCertFile, creds.ServingKeyFile
	}
	authn := cp.Authentication
	if authn.ClientCert.ClientCA == "" {
		authn.ClientCert.ClientCA = creds.CA.CertFile
	}
	if authn.RequestHeader.ClientCAFile == "" {
		authn.RequestHeader.ClientCAFile = creds.FrontProxyCA.CertFile
		authn.RequestHeader.AllowedNames = []string{pki.FrontProxyClientName}
		authn.RequestHeader.UsernameHeaders = []string{"X-Remote-User"}
		authn.RequestHeader.UIDHeaders = []string{"X-Remote-Uid"}
		authn.RequestHeader.GroupHeaders = []string{"X-Remote-Group"}
		authn.RequestHeader.ExtraHeaderPrefixes = []string{"X-Remote-Extra-"}
	}
	if cp.ProxyClientCertFile == "" && cp.ProxyClientKeyFile == "" {
		cp.ProxyClientCertFile, cp.ProxyClientKeyFile = creds.ProxyClientCertFile, creds.ProxyClientKeyFile
	}
	if cp.ServiceAccountSigningEndpoint == "" && cp.ServiceAccountSigningKeyFile == "" {
		cp.ServiceAccountSigningKeyFile = creds.ServiceAccountKeyFile
		if len(authn.ServiceAccounts.KeyFiles) == 0 {
			authn.ServiceAccounts.KeyFiles = []string{creds.ServiceAccountPublicKeyFile}
		}
	}
	if o.Controllers != nil {
		c.Controllers = o.completeControllers(creds, serving.CertFile, cp.ServiceAccountSigningKeyFile, c.Membership != nil || c.joinPlan != nil)
	}
	if len(authn.ServiceAccounts.Issuers) == 0 {
		authn.ServiceAccounts.Issuers = []string{DefaultServiceAccountIssuer}
	}
	// RBAC is our default mode; an authorization config file replaces
	// modes altogether, and upstream refuses both at once.
	if cp.Authorization.AuthorizationConfigurationFile != "" && slices.Equal(cp.Authorization.Modes, []string{authzmodes.ModeRBAC}) {
		cp.Authorization.Modes = nil
	}

	if err := withDefaultWatchCacheSizes(cp.Etcd); err != nil {
		return err
	}

	completed, err := cp.Complete(ctx, nil, nil)
	if err != nil {
		return err
	}
	// Applied process-wide already (ApplyToProcess): upstream's
	// configuration would apply them again, and differently.
	completed.Metrics = nil
	c.ControlPlane = completed
	return nil
}

// applyMetrics applies the metrics flags as upstream's Options.Apply does,
// which BuildGenericConfig would call (Complete leaves them out), but without a label allow-list when
// neither --allow-metric-labels nor --allow-metric-labels-manifest is set:
// upstream then applies an empty manifest and logs "The manifest file is
// empty, ignoring." as an error at every start (and an empty allow-list,
// "empty allow-list mapping supplied"). Either way no allow-list is in
// force.
func applyMetrics(o *metrics.Options) {
	if o == nil {
		return
	}
	if o.AllowListMapping != nil || o.AllowListMappingManifest != "" {
		o.Apply()
		return
	}
	if o.ShowHiddenMetricsForVersion != "" {
		metrics.SetShowHidden()
	}
	metrics.SetDisabledMetrics(o.DisabledMetrics)
}

// withDefaultWatchCacheSizes sets kube-apiserver's default watch cache
// sizes (kubeapiserver.DefaultWatchCacheSizes, which its completion
// applies and the generic control plane's options do not) under the sizes
// the user set with --watch-cache-sizes: no watch cache for events, core
// or events.k8s.io. Events come in bursts (a controller records one per
// decision) and are rarely watched; with their caches every start lists
// every stored event twice before /readyz passes, holds them twice in
// memory and lists them from etcd again every few minutes to check the
// caches. Without, they are read from etcd, as from kube-apiserver.
func withDefaultWatchCacheSizes(etcd *genericoptions.EtcdOptions) error {
	if !etcd.EnableWatchCache {
		return nil
	}
	sizes := kubeapiserver.DefaultWatchCacheSizes()
	user, err := genericoptions.ParseWatchCacheSizes(etcd.WatchCacheSizes)
	if err != nil {
		return err
	}
	maps.Copy(sizes, user)
	etcd.WatchCacheSizes, err = genericoptions.WriteWatchCacheSizes(sizes)
	return err
}

// copyForCompletion copies the upstream options and every part of them that
// our completion or upstream's fills in (etcd servers, certificates,
// authentication, authorization, the advertised address, --runtime-config),
// so that completing leaves the caller's options as they were: completed
// again, e.g. for another data dir, they still mean "embedded etcd" and
// "our certificates". TestCompleteLeavesCallerOptionsAlone walks every
// value the options reach, so that a part added upstream cannot leak.
func copyForCompletion(in *cpoptions.Options) *cpoptions.Options {
	out := *in
	// Upstream's completion defaults the advertise address and the
	// external host, and rewrites --runtime-config's keys (api/v1 → /v1).
	run := *in.GenericServerRunOptions
	run.AdvertiseAddress = slices.Clone(in.GenericServerRunOptions.AdvertiseAddress)
	out.GenericServerRunOptions = &run
	apis := *in.APIEnablement
	apis.RuntimeConfig = maps.Clone(in.APIEnablement.RuntimeConfig)
	out.APIEnablement = &apis
	etcd := *in.Etcd
	etcd.StorageConfig.Transport.ServerList = slices.Clone(in.Etcd.StorageConfig.Transport.ServerList)
	out.Etcd = &etcd
	secureServing, serving := *in.SecureServing, *in.SecureServing.SecureServingOptions
	secureServing.SecureServingOptions = &serving
	out.SecureServing = &secureServing
	authn := *in.Authentication
	clientCert, requestHeader, serviceAccounts := *in.Authentication.ClientCert, *in.Authentication.RequestHeader, *in.Authentication.ServiceAccounts
	authn.ClientCert, authn.RequestHeader, authn.ServiceAccounts = &clientCert, &requestHeader, &serviceAccounts
	out.Authentication = &authn
	authz := *in.Authorization
	authz.Modes = slices.Clone(in.Authorization.Modes)
	out.Authorization = &authz
	return &out
}

// servingHosts are the names the serving certificate is valid for.
func (o *Options) servingHosts() []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if bind := o.ControlPlane.SecureServing.BindAddress; bind != nil && !bind.IsUnspecified() {
		hosts = append(hosts, bind.String())
	} else if hostname, err := os.Hostname(); err == nil {
		// Listening on every interface: other machines reach us by name.
		hosts = append(hosts, hostname)
	}
	hosts = append(hosts, o.TLSSANs...)
	var unique []string
	for _, h := range hosts {
		if !slices.Contains(unique, h) {
			unique = append(unique, h)
		}
	}
	return unique
}

// Validate runs upstream's validation of the completed options. It checks
// --runtime-config against the groups the scheme knows, which the added
// ones joined when they were added (AddAPIGroup).
func (c CompletedOptions) Validate() []error {
	return c.ControlPlane.Validate()
}

// Listen binds the secure port (--bind-address, --secure-port; port 0
// picks a free one) unless the options carry a listener already, and
// checks that the embedded member's peer port is free when it listens for
// peers (etcd binds it when it starts). Listen before Join and StartEtcd, so
// that a port in use fails before the cluster or etcd is touched. Run frees
// the port when it stops; close the returned Listener after it too, for the
// case that Run never ran.
func (c CompletedOptions) Listen() (*Listener, error) {
	if err := c.checkPeerPort(); err != nil {
		return nil, err
	}
	ss := c.ControlPlane.SecureServing
	if ss.Listener == nil {
		addr := net.JoinHostPort(ss.BindAddress.String(), strconv.Itoa(ss.BindPort))
		listener, port, err := genericoptions.CreateListener(ss.BindNetwork, addr, net.ListenConfig{})
		if err != nil {
			return nil, fmt.Errorf("--secure-port %d on --bind-address %s: %w", ss.BindPort, ss.BindAddress, err)
		}
		ss.Listener, ss.BindPort = listener, port
	}
	l, ok := ss.Listener.(*servingListener)
	if !ok {
		l = newServingListener(ss.Listener)
		ss.Listener = l
	}
	return &Listener{serving: l}, nil
}

// checkPeerPort fails, naming the flag, when the port the embedded member
// will listen on for its peers is taken: a server that joins learns it
// before the cluster adds its member. (etcd opens the listener itself, so
// the port is only probed: another process may still take it meanwhile,
// and then the start that joined takes its member back out.)
func (c CompletedOptions) checkPeerPort() error {
	peerURL := ""
	switch {
	case c.joinPlan != nil:
		peerURL = c.joinPlan.peerURL
	case c.Membership != nil:
		peerURL = c.Membership.PeerURL
	default:
		return nil
	}
	u, err := url.Parse(peerURL)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		return fmt.Errorf("--etcd-peer-port %s on %s: %w", u.Port(), u.Hostname(), err)
	}
	return l.Close()
}
