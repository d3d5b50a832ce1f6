package controlplane

import (
	"path/filepath"
	"slices"
	"testing"
)

// Completing fills defaults into the completed options, not into the
// caller's: options completed again for another data dir get that dir's CA.
func TestCompleteLeavesCallerOptionsAlone(t *testing.T) {
	o := NewOptions()
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
	first := complete(t.TempDir())
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
