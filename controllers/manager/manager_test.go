package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/generic"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		name        string
		want        bool
	}{
		{[]string{"*"}, "garbage-collector-controller", true},
		{[]string{"*", "-garbage-collector-controller"}, "garbage-collector-controller", false},
		{[]string{"*", "-garbage-collector-controller"}, "namespace-controller", true},
		{[]string{"namespace-controller"}, "garbage-collector-controller", false},
		{[]string{"namespace-controller"}, "namespace-controller", true},
		{[]string{"*", "-garbagecollector"}, "garbage-collector-controller", false}, // the earlier name, an alias
		{[]string{"namespace"}, "namespace-controller", true},
		{[]string{}, "namespace-controller", false},
		{[]string{"-namespace", "*"}, "namespace-controller", false},                              // an alias disables its controller
		{[]string{"garbage-collector-controller", "-garbagecollector"}, "garbagecollector", true}, // the first explicit choice wins; asked by alias
		{[]string{"*", "-namespace-controller"}, "namespace", false},                              // asked by alias
		{[]string{"*", "-svm"}, "storage-version-migrator-controller", false},                     // kube-controller-manager's alias
		{[]string{"*", "-garbagecollector"}, "storage-version-migrator-controller", true},         // enabled, but see TestRequiredControllers
	} {
		o := NewOptions()
		o.Controllers = tc.controllers
		if got := o.Enabled(tc.name); got != tc.want {
			t.Errorf("--controllers=%s: %s enabled = %v, want %v", strings.Join(tc.controllers, ","), tc.name, got, tc.want)
		}
	}
}

// A controller runs only with the controllers it needs: without the garbage
// collector, the storage version migrator (which walks its caches) is left
// out rather than failing.
func TestRequiredControllers(t *testing.T) {
	migrator := generic.StorageVersionMigratorDescriptor()
	for _, tc := range []struct {
		controllers []string
		runs        bool
	}{
		{[]string{"*"}, true},
		{[]string{"*", "-garbagecollector"}, false},
		{[]string{"*", "-garbage-collector-controller"}, false},
		{[]string{"svm"}, false},
		{[]string{"svm", "garbagecollector"}, true},
		{[]string{"storage-version-migrator-controller", "garbage-collector-controller"}, true},
	} {
		o := NewOptions()
		o.Controllers = tc.controllers
		if got := o.runs(migrator); got != tc.runs {
			t.Errorf("--controllers=%s: the storage version migrator runs = %v, want %v", strings.Join(tc.controllers, ","), got, tc.runs)
		}
	}
}

// The generic controllers pass the checks a distribution's pass: each name
// and alias selects one controller (a repeated one would silently select
// another controller than the user meant), and each is reported under a
// name --controllers accepts.
func TestGenericControllersAreValid(t *testing.T) {
	if err := new(Options).AddControllers(GenericControllers()...); err != nil {
		t.Error(err)
	}
}

// The generic controllers are named as kube-controller-manager names them,
// and every name they had before is still accepted and still names their
// health check: nothing a user wrote breaks.
func TestEarlierNamesStillWork(t *testing.T) {
	for _, tc := range []struct {
		earlier, canonical string
		check              string // the health check, by its earlier name
	}{
		{"garbagecollector", names.GarbageCollectorController, "controller-garbagecollector"},
		{"namespace", names.NamespaceController, "controller-namespace"},
		{"serviceaccount", names.ServiceAccountController, "controller-serviceaccount"},
		{"clusterrole-aggregation", names.ClusterRoleAggregationController, "controller-clusterrole-aggregation"},
		{"resourcequota", names.ResourceQuotaController, "controller-resourcequota"},
		{"csrsigning", names.CertificateSigningRequestSigningController, "controller-csrsigning"},
		{"csrcleaner", names.CertificateSigningRequestCleanerController, "controller-csrcleaner"},
		{"serviceaccount-token", names.ServiceAccountTokenController, "controller-serviceaccount-token"},
		{"validatingadmissionpolicy-status", names.ValidatingAdmissionPolicyStatusController, "controller-validatingadmissionpolicy-status"},
		{"root-ca-cert-publisher", names.RootCACertificatePublisherController, "controller-root-ca-cert-publisher"},
		{"svm", names.StorageVersionMigratorController, "controller-storage-version-migrator-controller"},
	} {
		t.Run(tc.earlier, func(t *testing.T) {
			o := NewOptions()
			if !slices.Contains(o.KnownControllers(), tc.canonical) {
				t.Errorf("%s is not among the known controllers %v", tc.canonical, o.KnownControllers())
			}
			for _, value := range [][]string{{tc.earlier}, {"*", "-" + tc.earlier}} {
				o.Controllers = value
				if err := o.Validate(); err != nil {
					t.Errorf("--controllers=%s: %v", strings.Join(value, ","), err)
				}
			}
			o.Controllers = []string{tc.earlier, names.GarbageCollectorController} // the migrator needs the collector
			if !o.Enabled(tc.canonical) {
				t.Errorf("--controllers=%s does not enable %s", tc.earlier, tc.canonical)
			}
			if checks := checkNames(NewHealth(o)); !slices.Contains(checks, tc.check) {
				t.Errorf("health checks %v, want %s", checks, tc.check)
			}
			o.Controllers = []string{"*", "-" + tc.earlier}
			if o.Enabled(tc.canonical) {
				t.Errorf("--controllers=*,-%s does not disable %s", tc.earlier, tc.canonical)
			}
		})
	}
}

// The help of --controllers lists each controller by its name, with its
// aliases.
func TestControllersHelpListsAliases(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	usage := fs.Lookup("controllers").Usage
	for _, want := range []string{"garbage-collector-controller (garbagecollector)", "storage-version-migrator-controller (svm)", "root-ca-certificate-publisher-controller (root-ca-cert-publisher)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("--controllers help lacks %q:\n%s", want, usage)
		}
	}
}

// A distribution's controller is known exactly as the generic ones are:
// --controllers selects it by name or alias, validation accepts it, and it
// gets a health check. A descriptor that would be ambiguous or could not
// be built is refused with what is wrong.
func TestAddControllers(t *testing.T) {
	noop := func(context.Context, *controller.Context) (controller.Run, error) { return nil, nil }
	hello := controller.Descriptor{Name: "hello-controller", Aliases: []string{"hello"}, ReportedName: "hello", ServiceAccount: "hello", New: noop,
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}
	o := NewOptions()
	if err := o.AddControllers(hello); err != nil {
		t.Fatalf("AddControllers: %v", err)
	}
	if known := o.KnownControllers(); known[len(known)-1] != "hello-controller" {
		t.Errorf("known controllers %v, want hello-controller last (started after the generic ones)", known)
	}
	o.Controllers = []string{"*", "-hello"}
	if err := o.Validate(); err != nil {
		t.Errorf("--controllers with the alias of an added controller: %v", err)
	}
	if o.Enabled("hello-controller") {
		t.Error("hello-controller is enabled although its alias disables it")
	}
	o.Controllers = []string{"hello-controller"}
	if checks := checkNames(NewHealth(o)); !slices.Equal(checks, []string{"controller-hello"}) {
		t.Errorf("health checks %v, want controller-hello (its ReportedName)", checks)
	}
	if err := o.AddControllers(controller.Descriptor{Name: "plain", New: noop}); err != nil {
		t.Fatal(err)
	}
	o.Controllers = []string{"plain"}
	if checks := checkNames(NewHealth(o)); !slices.Equal(checks, []string{"controller-plain"}) {
		t.Errorf("health checks %v, want controller-plain (its Name, without a ReportedName)", checks)
	}

	for _, tc := range []struct {
		name    string
		d       controller.Descriptor
		wantErr string
	}{
		{"no name", controller.Descriptor{New: noop}, "needs a Name"},
		{"no New", controller.Descriptor{Name: "x"}, "needs New"},
		{"rules without service account", controller.Descriptor{Name: "x", New: noop, Rules: hello.Rules}, "ServiceAccount, which is empty"},
		{"taken name", controller.Descriptor{Name: "namespace-controller", New: noop}, `the name "namespace-controller" is taken`},
		{"name of a generic alias", controller.Descriptor{Name: "namespace", New: noop}, `the name "namespace" is taken`},
		{"taken alias", controller.Descriptor{Name: "x", Aliases: []string{"svm"}, New: noop}, `the name "svm" is taken`},
		{"name of an earlier alias", controller.Descriptor{Name: "hello", New: noop}, "taken"},
		{"reported name not accepted", controller.Descriptor{Name: "x", Aliases: []string{"y"}, ReportedName: "z", New: noop}, `ReportedName "z" must be its Name or one of its Aliases`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			if err := o.AddControllers(hello); err != nil {
				t.Fatal(err)
			}
			err := o.AddControllers(tc.d)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if len(o.Descriptors()) != len(GenericControllers())+1 {
				t.Errorf("a refused descriptor was added")
			}
		})
	}
}

func checkNames(h *Health) []string {
	var checks []string
	for _, c := range h.Checks() {
		checks = append(checks, c.Name())
	}
	return checks
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"unknown controller", func(o *Options) { o.Controllers = []string{"*", "-deployment"} }, `--controllers: unknown controller "-deployment"`},
		{"unknown controller names the known ones", func(o *Options) { o.Controllers = []string{"garbagecolector"} }, "garbage-collector-controller (garbagecollector), namespace-controller (namespace)"},
		{"aliases", func(o *Options) {
			o.Controllers = []string{"*", "-garbagecollector", "namespace", "-svm"}
		}, ""},
		{"names", func(o *Options) {
			o.Controllers = []string{"*", "-garbage-collector-controller", "namespace-controller", "-storage-version-migrator-controller"}
		}, ""},
		{"zero gc workers", func(o *Options) { o.ConcurrentGCSyncs = 0 }, "--concurrent-gc-syncs must be at least 1"},
		{"zero namespace workers", func(o *Options) { o.ConcurrentNamespaceSyncs = 0 }, "--concurrent-namespace-syncs must be at least 1"},
		{"no namespace deletion grace period", func(o *Options) { o.NamespaceDeletionGracePeriod = 0 }, ""},
		{"negative namespace deletion grace period", func(o *Options) { o.NamespaceDeletionGracePeriod = -time.Second }, "--namespace-deletion-grace-period must not be negative"},
		{"renew deadline beyond lease", func(o *Options) { o.RenewDeadline = o.LeaseDuration }, "--leader-elect-renew-deadline"},
		{"retry period too close to renew deadline", func(o *Options) { o.RetryPeriod = 9 * time.Second }, "must exceed 1.2"},
		{"timings ignored without election", func(o *Options) { o.LeaderElect = false; o.RenewDeadline = o.LeaseDuration }, ""},
		{"no shutdown timeout", func(o *Options) { o.ControllerShutdownTimeout = 0 }, ""},
		{"negative shutdown timeout", func(o *Options) { o.ControllerShutdownTimeout = -time.Second }, "--controller-shutdown-timeout must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestHealthReportsFailedControllers(t *testing.T) {
	o := NewOptions()
	o.Controllers = []string{"*", "-namespace-controller"}
	h := NewHealth(o)
	checks := map[string]func() error{}
	for _, c := range h.Checks() {
		checks[c.Name()] = func() error { return c.Check(nil) }
	}
	if _, ok := checks["controller-namespace"]; ok {
		t.Error("a disabled controller has a health check")
	}
	if err := checks["controller-garbagecollector"](); err != nil {
		t.Fatalf("healthy before anything happened: %v", err)
	}
	h.failed("garbagecollector", "cannot start", errors.New("no discovery"))
	if err := checks["controller-garbagecollector"](); err == nil || !strings.Contains(err.Error(), "no discovery") {
		t.Fatalf("failed controller reports %v", err)
	}
	if err := checks["controller-serviceaccount"](); err != nil {
		t.Fatalf("another controller's failure leaked: %v", err)
	}
}

// A controller stuck where ctx does not reach (minting its credentials:
// upstream's client builder cannot be cancelled) in a request that gets no
// answer, as from an API server whose etcd lost quorum, holds up the stop
// no longer than --controller-shutdown-timeout, and is named.
func TestRunReturnsWithinShutdownTimeout(t *testing.T) {
	received := make(chan struct{})
	var once sync.Once
	answer := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		once.Do(func() { close(received) })
		<-answer
		http.Error(w, "etcd lost quorum", http.StatusServiceUnavailable)
	}))
	t.Cleanup(server.Close)
	t.Cleanup(func() { close(answer) }) // before server.Close, which waits for the handlers

	o := NewOptions()
	o.LeaderElect = false
	o.Controllers = []string{names.ServiceAccountController}
	o.ControllerShutdownTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, &rest.Config{Host: server.URL}, nil) }()
	select {
	case <-received:
	case err := <-done:
		t.Fatalf("Run returned before it was stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the controller never asked the API server")
	}

	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if took := time.Since(start); took < o.ControllerShutdownTimeout {
			t.Errorf("Run returned after %s, before the timeout, with the controller still stuck", took)
		}
		// Named as the manager reports it, as in its logs.
		if want := "serviceaccount (starting)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one that names %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still running 10s after the stop, with --controller-shutdown-timeout=%s", o.ControllerShutdownTimeout)
	}
}
