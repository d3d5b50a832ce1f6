package manager

import (
	"strings"
	"testing"
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
	} {
		o := NewOptions()
		o.Controllers = tc.controllers
		if got := o.Enabled(tc.name); got != tc.want {
			t.Errorf("--controllers=%s: %s enabled = %v, want %v", strings.Join(tc.controllers, ","), tc.name, got, tc.want)
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
		{"zero gc workers", func(o *Options) { o.ConcurrentGCSyncs = 0 }, "--concurrent-gc-syncs must be at least 1"},
		{"zero namespace workers", func(o *Options) { o.ConcurrentNamespaceSyncs = 0 }, "--concurrent-namespace-syncs must be at least 1"},
		{"renew deadline beyond lease", func(o *Options) { o.RenewDeadline = o.LeaseDuration }, "--leader-elect-renew-deadline"},
		{"timings ignored without election", func(o *Options) { o.LeaderElect = false; o.RenewDeadline = o.LeaseDuration }, ""},
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
