package app

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
)

const testServer = "https://127.0.0.1:7443"

// userDataDir is the data dir of a control plane that served on
// testServer: its PKI and admin kubeconfig.
func userDataDir(t *testing.T) (dir string, ca *pki.Authority) {
	t.Helper()
	dir = t.TempDir()
	p, err := pki.Ensure(filepath.Join(dir, "pki"), pki.Hosts{Serving: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.EnsureAdminKubeconfig(filepath.Join(dir, "admin.kubeconfig"), testServer, p); err != nil {
		t.Fatal(err)
	}
	return dir, p.CA
}

func TestKubeconfigUserBadArguments(t *testing.T) {
	dataDir, _ := userDataDir(t)
	empty := t.TempDir()
	noKubeconfig := t.TempDir()
	if _, err := pki.Ensure(filepath.Join(noKubeconfig, "pki"), pki.Hosts{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no name", []string{"kubeconfig", "user", "--data-dir=" + dataDir}, "sample-generic-controlplane kubeconfig user needs NAME; e.g. sample-generic-controlplane kubeconfig user alice --group=developers"},
		{"two names", []string{"kubeconfig", "user", "alice", "bob", "--data-dir=" + dataDir}, "takes one NAME, got 2 arguments (alice bob)"},
		{"zero validity", []string{"kubeconfig", "user", "alice", "--validity=0", "--data-dir=" + dataDir}, "--validity must be positive, e.g. --validity=24h"},
		{"negative validity", []string{"kubeconfig", "user", "alice", "--validity=-1h", "--data-dir=" + dataDir}, "--validity must be positive, e.g. --validity=24h"},
		{"past the CA", []string{"kubeconfig", "user", "alice", "--validity=100000h", "--data-dir=" + dataDir}, "would outlast the CA"},
		{"no CA", []string{"kubeconfig", "user", "alice", "--data-dir=" + empty}, "data dir " + empty + " holds no CA (pki/ca.crt and ca.key): a control plane must have run on this data dir to create one"},
		{"no admin kubeconfig", []string{"kubeconfig", "user", "alice", "--data-dir=" + noKubeconfig}, "data dir " + noKubeconfig + " holds no admin.kubeconfig, which names the server: a control plane writes it when it first serves on this data dir"},
		{"unknown subcommand", []string{"kubeconfig", "admin"}, `unknown command "admin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%q: %v, want an error containing %q; output:\n%s", tc.args, err, tc.wantErr, out)
			}
		})
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("kubeconfig user wrote %d files into a data dir without a CA", len(entries))
	}
}

func TestKubeconfigUser(t *testing.T) {
	dataDir, ca := userDataDir(t)

	// On stdout, by default. A group is taken as written, commas and all.
	out, err := execute(t, "kubeconfig", "user", "alice", "--group=developers", "--group=ops", "--group=audit,billing", "--validity=2h", "--data-dir="+dataDir)
	if err != nil {
		t.Fatalf("kubeconfig user: %v\n%s", err, out)
	}
	config, err := clientcmd.Load([]byte(out))
	if err != nil {
		t.Fatalf("kubeconfig user printed no kubeconfig: %v\n%s", err, out)
	}
	checkUserKubeconfig(t, config, ca, "alice", []string{"audit,billing", "developers", "ops"}, 2*time.Hour)

	// In a file only its owner reads, also when it was readable before.
	file := filepath.Join(t.TempDir(), "bob.kubeconfig")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = execute(t, "kubeconfig", "user", "bob", "-o", file, "--data-dir="+dataDir)
	if err != nil || out != "" {
		t.Fatalf("kubeconfig user -o: %v; printed %q", err, out)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("-o wrote %s with mode %v (%v), want 0600", file, info.Mode().Perm(), err)
	}
	config, err = clientcmd.LoadFromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	checkUserKubeconfig(t, config, ca, "bob", nil, defaultUserValidity)
}

// checkUserKubeconfig checks that config reaches testServer, trusts ca,
// and authenticates as user in groups with a certificate from ca that
// lasts validity.
func checkUserKubeconfig(t *testing.T, config *clientcmdapi.Config, ca *pki.Authority, user string, groups []string, validity time.Duration) {
	t.Helper()
	context := config.Contexts[config.CurrentContext]
	if context == nil || config.Clusters[context.Cluster] == nil || config.AuthInfos[context.AuthInfo] == nil || context.AuthInfo != user {
		t.Fatalf("current context %q does not name a cluster and user %s", config.CurrentContext, user)
	}
	cluster, auth := config.Clusters[context.Cluster], config.AuthInfos[context.AuthInfo]
	if cluster.Server != testServer || !bytes.Equal(cluster.CertificateAuthorityData, ca.CertPEM()) {
		t.Errorf("cluster: server %q, want %q from the admin kubeconfig, and the data dir's CA", cluster.Server, testServer)
	}
	certs, err := certutil.ParseCertsPEM(auth.ClientCertificateData)
	if err != nil {
		t.Fatal(err)
	}
	cert := certs[0]
	if cert.Subject.CommonName != user || !slices.Equal(slices.Sorted(slices.Values(cert.Subject.Organization)), groups) {
		t.Errorf("certificate for %q in %q, want %q in %q", cert.Subject.CommonName, cert.Subject.Organization, user, groups)
	}
	if remaining := time.Until(cert.NotAfter); remaining > validity || remaining < validity-time.Minute {
		t.Errorf("certificate expires in %s, want %s", remaining, validity)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("certificate does not verify against the data dir's CA as a client's: %v", err)
	}
}
