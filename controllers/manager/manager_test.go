package manager

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"sigs.k8s.io/sample-generic-controlplane/controllers/serviceaccount"
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
	var migrator controller
	for _, c := range registry {
		if c.name == "storage-version-migrator-controller" {
			migrator = c
		}
	}
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
	for _, c := range registry {
		for _, n := range append([]string{c.name}, c.aliases...) {
			if other, ok := seen[n]; ok {
				t.Errorf("%q names both %s and %s", n, other, c.name)
			}
			seen[n] = c.name
		}
	}
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
