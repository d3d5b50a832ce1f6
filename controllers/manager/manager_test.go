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

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccount"
	"sigs.k8s.io/sample-generic-controlplane/controllers/storageversionmigrator"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		name        string
		want        bool
	}{
		{[]string{"*"}, "garbagecollector", true},
		{[]string{"*", "-garbagecollector"}, "garbagecollector", false},
		{[]string{"*", "-garbagecollector"}, "namespace", true},
		{[]string{"namespace"}, "garbagecollector", false},
		{[]string{"namespace"}, "namespace", true},
		{[]string{"*", "-garbage-collector-controller"}, "garbagecollector", false}, // kube-controller-manager's name
		{[]string{"namespace-controller"}, "namespace", true},
		{[]string{}, "namespace", false},
		{[]string{"-namespace-controller", "*"}, "namespace", false},                              // an alias disables its controller
		{[]string{"garbagecollector", "-garbage-collector-controller"}, "garbagecollector", true}, // the first explicit choice wins
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
	migrator := storageversionmigrator.Descriptor()
	for _, tc := range []struct {
		controllers []string
		runs        bool
	}{
		{[]string{"*"}, true},
		{[]string{"*", "-garbagecollector"}, false},
		{[]string{"*", "-garbage-collector-controller"}, false},
		{[]string{"svm"}, false},
		{[]string{"svm", "garbagecollector"}, true},
	} {
		o := NewOptions()
		o.Controllers = tc.controllers
		if got := o.runs(migrator); got != tc.runs {
			t.Errorf("--controllers=%s: the storage version migrator runs = %v, want %v", strings.Join(tc.controllers, ","), got, tc.runs)
		}
	}
}

// Each name and alias selects one controller: a repeated one would
// silently select another controller than the user meant.
func TestNamesAndAliasesAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, d := range GenericControllers() {
		for _, n := range append([]string{d.Name}, d.Aliases...) {
			if other, ok := seen[n]; ok {
				t.Errorf("%q names both %s and %s", n, other, d.Name)
			}
			seen[n] = d.Name
		}
	}
}

// A distribution's controller is known exactly as the generic ones are:
// --controllers selects it by name or alias, validation accepts it, and it
// gets a health check. A descriptor that would be ambiguous or could not
// be built is refused with what is wrong.
func TestAddControllers(t *testing.T) {
	noop := func(context.Context, *controller.Context) (controller.Run, error) { return nil, nil }
	hello := controller.Descriptor{Name: "hello", Aliases: []string{"hello-controller"}, ServiceAccount: "hello", New: noop,
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}
	o := NewOptions()
	if err := o.AddControllers(hello); err != nil {
		t.Fatalf("AddControllers: %v", err)
	}
	if known := o.KnownControllers(); known[len(known)-1] != "hello" {
		t.Errorf("known controllers %v, want hello last (started after the generic ones)", known)
	}
	o.Controllers = []string{"*", "-hello-controller"}
	if err := o.Validate(); err != nil {
		t.Errorf("--controllers with the alias of an added controller: %v", err)
	}
	if o.Enabled("hello") {
		t.Error("hello is enabled although its alias disables it")
	}
	o.Controllers = []string{"hello"}
	if names := checkNames(NewHealth(o)); !slices.Equal(names, []string{"controller-hello"}) {
		t.Errorf("health checks %v, want controller-hello", names)
	}

	for _, tc := range []struct {
		name    string
		d       controller.Descriptor
		wantErr string
	}{
		{"no name", controller.Descriptor{New: noop}, "needs a Name"},
		{"no New", controller.Descriptor{Name: "x"}, "needs New"},
		{"rules without service account", controller.Descriptor{Name: "x", New: noop, Rules: hello.Rules}, "ServiceAccount, which is empty"},
		{"taken name", controller.Descriptor{Name: "namespace", New: noop}, `the name "namespace" is taken`},
		{"taken alias", controller.Descriptor{Name: "x", Aliases: []string{"svm"}, New: noop}, `the name "svm" is taken`},
		{"name of an earlier alias", controller.Descriptor{Name: "hello-controller", New: noop}, "taken"},
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
	var names []string
	for _, c := range h.Checks() {
		names = append(names, c.Name())
	}
	return names
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"unknown controller", func(o *Options) { o.Controllers = []string{"*", "-deployment"} }, `--controllers: unknown controller "-deployment"`},
		{"aliases", func(o *Options) {
			o.Controllers = []string{"*", "-garbage-collector-controller", "namespace-controller", "-svm"}
		}, ""},
		{"zero gc workers", func(o *Options) { o.ConcurrentGCSyncs = 0 }, "--concurrent-gc-syncs must be at least 1"},
		{"zero namespace workers", func(o *Options) { o.ConcurrentNamespaceSyncs = 0 }, "--concurrent-namespace-syncs must be at least 1"},
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
	o.Controllers = []string{"*", "-namespace"}
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
	o.Controllers = []string{serviceaccount.Name}
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
		if err == nil || !strings.Contains(err.Error(), serviceaccount.Name) {
			t.Errorf("error %v, want one that names %s", err, serviceaccount.Name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still running 10s after the stop, with --controller-shutdown-timeout=%s", o.ControllerShutdownTimeout)
	}
}
