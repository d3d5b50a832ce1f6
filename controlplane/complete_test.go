package controlplane

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Completing fills defaults into the completed options, not into the
// caller's: options completed again for another data dir get that dir's CA,
// and nothing the caller holds changes, down to the last pointer.
func TestCompleteLeavesCallerOptionsAlone(t *testing.T) {
	o := NewOptions()
	// Upstream's completion rewrites these keys (api/v1 → /v1).
	o.ControlPlane.APIEnablement.RuntimeConfig = map[string]string{"api/v1": "true", "api/legacy": "true"}
	o.DataDir = t.TempDir()
	before := fingerprint(o)
	complete := func(dir string) CompletedOptions {
		t.Helper()
		o.DataDir = dir
		d, err := o.PrepareDataDir(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		c, err := o.Complete(t.Context(), d)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	firstDir := o.DataDir
	first := complete(firstDir)
	o.DataDir = firstDir
	if diff := changedOptions(before, fingerprint(o)); len(diff) > 0 {
		t.Errorf("Complete changed the caller's options:\n%s", strings.Join(diff, "\n"))
	}
	second := complete(t.TempDir())

	for name, c := range map[string]CompletedOptions{"first": first, "second": second} {
		if want := "unix://" + filepath.Join(c.DataDir.Path, "run", "etcd.sock"); !slices.Equal(c.ControlPlane.Etcd.StorageConfig.Transport.ServerList, []string{want}) {
			t.Errorf("%s: etcd servers %q, want its own data dir's socket %s", name, c.ControlPlane.Etcd.StorageConfig.Transport.ServerList, want)
		}
		if want := filepath.Join(c.DataDir.Path, "pki", "ca.crt"); c.Controllers.ClusterSigningCertFile != want || c.Controllers.RootCAFile != want {
			t.Errorf("%s: signing CA %q and root CA %q, want %q", name, c.Controllers.ClusterSigningCertFile, c.Controllers.RootCAFile, want)
		}
	}
	if o.Controllers.ClusterSigningCertFile != "" || o.Controllers.RootCAFile != "" || !o.Controllers.LeaderElect {
		t.Errorf("the caller's controller options were changed: %+v", *o.Controllers)
	}
	if servers := o.ControlPlane.Etcd.StorageConfig.Transport.ServerList; len(servers) != 0 {
		t.Errorf("the caller's --etcd-servers became %v", servers)
	}
	if cert := o.ControlPlane.SecureServing.ServerCert.CertKey.CertFile; cert != "" {
		t.Errorf("the caller's --tls-cert-file became %q", cert)
	}
}

// Events have no watch cache unless --watch-cache-sizes gives them one, as
// in kube-apiserver: a start does not list every stored event into two
// caches before it is ready.
func TestCompleteLeavesEventsUncached(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag []string
		want []string
	}{
		{name: "default", want: []string{"events#0", "events.events.k8s.io#0"}},
		{name: "the user's size wins", flag: []string{"events#100", "networkclaims.networking.x-k8s.io#0"},
			want: []string{"events#100", "events.events.k8s.io#0", "networkclaims.networking.x-k8s.io#0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir = t.TempDir()
			o.ControlPlane.Etcd.WatchCacheSizes = tc.flag
			d, err := o.PrepareDataDir(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Close)
			c, err := o.Complete(t.Context(), d)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(slices.Values(c.ControlPlane.Etcd.WatchCacheSizes))
			if !slices.Equal(got, tc.want) {
				t.Errorf("watch cache sizes %q, want %q", got, tc.want)
			}
			if !slices.Equal(o.ControlPlane.Etcd.WatchCacheSizes, tc.flag) {
				t.Errorf("the caller's --watch-cache-sizes became %q", o.ControlPlane.Etcd.WatchCacheSizes)
			}
		})
	}
}

// changedOptions is changed without the process's feature gates and
// emulation versions (ComponentGlobalsRegistry): one registry for the
// process, shared by reference, that completion may read (and complete, when
// ApplyToProcess did not), not an option value of the caller's.
func changedOptions(before, after map[string]string) []string {
	var diff []string
	for _, d := range changed(before, after) {
		if !strings.Contains(d, ".ComponentGlobalsRegistry(") {
			diff = append(diff, d)
		}
	}
	return diff
}
