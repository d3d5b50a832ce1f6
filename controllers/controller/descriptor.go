package controller

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-base/featuregate"
)

// Run runs a built controller until ctx is done.
type Run func(ctx context.Context)

// Descriptor describes a controller to the manager, as kube-controller-manager's
// ControllerDescriptor does: --controllers selects it by name or alias, it
// runs only on the leading replica, and /livez/controller-<name> reports it.
// Distributions register their own beside the generic ones.
type Descriptor struct {
	// Name selects the controller in --controllers. For upstream's
	// controllers it is kube-controller-manager's canonical name
	// (k8s.io/kubernetes/cmd/kube-controller-manager/names), e.g.
	// "garbage-collector-controller"; new ones are best named alike.
	Name string
	// Aliases are other names --controllers accepts: earlier names of the
	// controller, which must keep working, e.g. "garbagecollector".
	Aliases []string
	// ReportedName is the name the manager reports the controller under:
	// its health check, /livez/controller-<ReportedName>, and the
	// "controller" key of its log lines. Empty means Name. A controller
	// whose Name changed keeps its earlier name here (and in Aliases), so
	// that probes, ?exclude= lists and log queries written for it keep
	// working. It must be Name or one of Aliases.
	ReportedName string
	// RequiredFeatureGates must all be on for the controller to run.
	RequiredFeatureGates []featuregate.Feature
	// RequiredControllers must all be enabled for the controller to run: it
	// uses what they build (e.g. the garbage collector's caches).
	RequiredControllers []string
	// ServiceAccount is the service account in kube-system the controller
	// acts as: New gets its clients from Context.ClientBuilder under this
	// name. Empty when it acts as the manager itself (Context.RootClient).
	ServiceAccount string
	// Rules are what ServiceAccount may do. When set, the control plane
	// keeps a ClusterRole system:controller:<ServiceAccount> with exactly
	// these rules, bound to it, at every start. Leave it nil when the role
	// exists already (upstream's bootstrap policy has one for each of its
	// controllers).
	Rules []rbacv1.PolicyRule
	// New builds the controller: it registers the informers it needs and
	// returns how to run it, or nil when, as configured, it has nothing to
	// do (it logs why). It must not block: the manager starts the
	// informers only once every controller is built.
	New func(ctx context.Context, c *Context) (Run, error)
}

// Settings are the generic controllers' settings, set by the manager's
// flags (kube-controller-manager's names): what kube-controller-manager
// keeps in its component configuration.
type Settings struct {
	ConcurrentGCSyncs        int
	ConcurrentNamespaceSyncs int
	// NamespaceDeletionGracePeriod is how long after a namespace's deletion
	// the namespace controller starts emptying it: upstream's 5 s lets other
	// API servers and etcd members see the deletion first.
	NamespaceDeletionGracePeriod time.Duration
	ConcurrentQuotaSyncs         int
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
}
