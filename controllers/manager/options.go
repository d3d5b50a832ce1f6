// Package manager starts the enabled in-process controllers of the control
// plane, once per cluster: replicas sharing one etcd elect a leader on a
// Lease and only the leader runs controllers.
package manager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/featuregate"
	"k8s.io/controller-manager/app"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/namespace"
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
	Controllers []string
	// Settings configure the generic controllers.
	controller.Settings
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

	// descriptors are the controllers this manager knows, in start order.
	descriptors []controller.Descriptor
}

// NewOptions returns kube-controller-manager's defaults, knowing the
// generic controllers; AddControllers adds others.
func NewOptions() *Options {
	return &Options{
		Controllers: []string{"*"},
		Settings: controller.Settings{
			ConcurrentGCSyncs:            20,
			ConcurrentNamespaceSyncs:     10,
			NamespaceDeletionGracePeriod: namespace.DefaultDeletionGracePeriod,
			ConcurrentQuotaSyncs:         5,
			// kube-controller-manager waits 5 min. Usage comes from in-memory
			// caches, so 30 s is cheap, and it bounds how long a deletion goes
			// unnoticed for a resource the controller does not watch yet (a CRD
			// created seconds before).
			ResourceQuotaSyncPeriod: 30 * time.Second,
			ClusterSigningDuration:  365 * 24 * time.Hour,
		},
		LeaderElect:   true,
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		// kube-controller-manager waits 10 s; the all-in-one control
		// plane stops its API server after the controllers, and the whole
		// stop must stay within 15 s.
		ControllerShutdownTimeout: 5 * time.Second,
		descriptors:               GenericControllers(),
	}
}

// AddControllers makes the manager know more controllers, started after
// those it knows already, in the order given. Add them before AddFlags,
// whose help lists the known names. Each needs a name and New, and no name
// or alias may be taken; if one is refused, none is added.
func (o *Options) AddControllers(descriptors ...controller.Descriptor) error {
	taken := sets.New[string]()
	for _, d := range o.descriptors {
		taken.Insert(d.Name)
		taken.Insert(d.Aliases...)
	}
	for _, d := range descriptors {
		switch {
		case d.Name == "":
			return errors.New("a controller descriptor needs a Name")
		case d.New == nil:
			return fmt.Errorf("controller %q: the descriptor needs New, which builds the controller", d.Name)
		case len(d.Rules) > 0 && d.ServiceAccount == "":
			return fmt.Errorf("controller %q: Rules are granted to ServiceAccount, which is empty", d.Name)
		case d.ReportedName != "" && d.ReportedName != d.Name && !slices.Contains(d.Aliases, d.ReportedName):
			return fmt.Errorf("controller %q: ReportedName %q must be its Name or one of its Aliases, which --controllers accepts", d.Name, d.ReportedName)
		}
		for _, name := range append([]string{d.Name}, d.Aliases...) {
			if taken.Has(name) {
				return fmt.Errorf("controller %q: the name %q is taken already", d.Name, name)
			}
			taken.Insert(name)
		}
	}
	o.descriptors = append(o.descriptors, descriptors...)
	return nil
}

// Descriptors are the controllers this manager knows, in start order.
func (o *Options) Descriptors() []controller.Descriptor {
	return slices.Clone(o.descriptors)
}

// reportedName is the name the manager reports d under: its health check
// and the controller key of its log lines.
func reportedName(d controller.Descriptor) string {
	if d.ReportedName != "" {
		return d.ReportedName
	}
	return d.Name
}

// gatedOff returns the first required feature gate of d that is off, if any.
func gatedOff(d controller.Descriptor) (featuregate.Feature, bool) {
	for _, g := range d.RequiredFeatureGates {
		if !utilfeature.DefaultFeatureGate.Enabled(g) {
			return g, true
		}
	}
	return "", false
}

// GatedOff reports whether a feature gate d requires is off.
func GatedOff(d controller.Descriptor) bool {
	_, off := gatedOff(d)
	return off
}

// missingController returns the first required controller that
// --controllers disables, if any, by the name it is reported under.
func (o *Options) missingController(d controller.Descriptor) (string, bool) {
	for _, name := range d.RequiredControllers {
		if !o.Enabled(name) {
			return o.reportedNameOf(name), true
		}
	}
	return "", false
}

// reportedNameOf returns the name the manager reports the named controller
// (by name or alias) under.
func (o *Options) reportedNameOf(name string) string {
	for _, d := range o.descriptors {
		if d.Name == name || slices.Contains(d.Aliases, name) {
			return reportedName(d)
		}
	}
	return name
}

// runs reports whether the controller runs: --controllers enables it and
// the controllers it needs, and its feature gates are on.
func (o *Options) runs(d controller.Descriptor) bool {
	_, missing := o.missingController(d)
	return !GatedOff(d) && !missing && o.Enabled(d.Name)
}

// KnownControllers are the names --controllers accepts (aliases aside).
func (o *Options) KnownControllers() []string {
	var names []string
	for _, d := range o.descriptors {
		names = append(names, d.Name)
	}
	return names
}

// knownWithAliases lists the known controllers for help and errors, each
// with its aliases: "garbage-collector-controller (garbagecollector), ...".
func (o *Options) knownWithAliases() string {
	var names []string
	for _, d := range o.descriptors {
		name := d.Name
		if len(d.Aliases) > 0 {
			name += " (" + strings.Join(d.Aliases, ", ") + ")"
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// AddFlags adds the manager's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Controllers, "controllers", o.Controllers, fmt.Sprintf(
		"Controllers to run in-process: '*' runs all, 'foo' runs foo, '-foo' disables foo; e.g. '*,-garbage-collector-controller' (which leaves out the storage version migrator too: it needs the collector). Known controllers, with their aliases in parentheses: %s.",
		o.knownWithAliases()))
	fs.IntVar(&o.ConcurrentGCSyncs, "concurrent-gc-syncs", o.ConcurrentGCSyncs, "Number of garbage collector workers.")
	fs.IntVar(&o.ConcurrentNamespaceSyncs, "concurrent-namespace-syncs", o.ConcurrentNamespaceSyncs, "Number of namespaces deleted in parallel.")
	fs.DurationVar(&o.NamespaceDeletionGracePeriod, "namespace-deletion-grace-period", o.NamespaceDeletionGracePeriod, "How long after a namespace's deletion its content starts to be deleted. kube-controller-manager's 5s lets other API servers and etcd members see the deletion first; a control plane whose API server is alone on its etcd can use 0, as the test servers do.")
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
	known := sets.New(o.KnownControllers()...)
	for i, c := range o.canonicalControllers(o.Controllers) {
		if c != "*" && !known.Has(strings.TrimPrefix(c, "-")) {
			errs = append(errs, fmt.Errorf("--controllers: unknown controller %q; write '*', a name or -name, with names (or aliases, in parentheses) from: %s", o.Controllers[i], o.knownWithAliases()))
		}
	}
	if o.ConcurrentGCSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-gc-syncs must be at least 1, got %d", o.ConcurrentGCSyncs))
	}
	if o.ConcurrentNamespaceSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-namespace-syncs must be at least 1, got %d", o.ConcurrentNamespaceSyncs))
	}
	if o.NamespaceDeletionGracePeriod < 0 {
		errs = append(errs, fmt.Errorf("--namespace-deletion-grace-period must not be negative, got %s; write e.g. --namespace-deletion-grace-period=5s, or 0 to start at once", o.NamespaceDeletionGracePeriod))
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

// Enabled reports whether --controllers enables the named controller (name
// or alias), with kube-controller-manager's rules (app.IsControllerEnabled):
// aliases count as their controller's name, the first explicit name or
// -name wins over '*', and no controller is disabled by default.
func (o *Options) Enabled(name string) bool {
	if canonical, ok := o.aliases()[name]; ok {
		name = canonical
	}
	return app.IsControllerEnabled(name, nil, o.canonicalControllers(o.Controllers))
}

// aliases maps each alias (kube-controller-manager's controller names) to
// the name of its controller.
func (o *Options) aliases() map[string]string {
	m := map[string]string{}
	for _, d := range o.descriptors {
		for _, a := range d.Aliases {
			m[a] = d.Name
		}
	}
	return m
}

// canonicalControllers replaces aliases in a --controllers value with the
// names they stand for, keeping '-' and '*', as kube-controller-manager's
// options do before it matches controllers.
func (o *Options) canonicalControllers(controllers []string) []string {
	aliasOf := o.aliases()
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
