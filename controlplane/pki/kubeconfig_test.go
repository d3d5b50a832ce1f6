package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminKubeconfig loads the kubeconfig at path and checks everything that
// does not depend on the call: permissions, context, trust, identity.
func adminKubeconfig(t *testing.T, path string, p *PKI, wantServer string) (*clientcmdapi.Config, *x509.Certificate) {
	t.Helper()
	checkMode(t, path, 0o600)
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("current context %q is not defined", cfg.CurrentContext)
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || auth == nil {
		t.Fatalf("context %q names cluster %q and user %q, which are not both defined", cfg.CurrentContext, ctx.Cluster, ctx.AuthInfo)
	}
	if cluster.Server != wantServer {
		t.Errorf("server = %q, want %q", cluster.Server, wantServer)
	}
	if cluster.InsecureSkipTLSVerify {
		t.Error("kubeconfig skips TLS verification")
	}
	if !bytes.Equal(cluster.CertificateAuthorityData, mustRead(t, p.CA.CertFile)) {
		t.Error("certificate-authority-data is not the CA certificate")
	}
	if cluster.CertificateAuthority != "" || auth.ClientCertificate != "" || auth.ClientKey != "" {
		t.Error("kubeconfig refers to files; it must be self-contained")
	}
	cert := parseCertPEM(t, auth.ClientCertificateData)
	if cert.Subject.CommonName != AdminUser || AdminUser != "admin" {
		t.Errorf("client certificate CN = %q, want admin", cert.Subject.CommonName)
	}
	if !slices.Equal(cert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client certificate O = %q, want [system:masters]", cert.Subject.Organization)
	}
	if err := verify(cert, p.CA, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("client certificate does not verify against the CA: %v", err)
	}
	if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
		t.Errorf("client certificate and key are not a pair: %v", err)
	}

	// What clients build from it trusts the CA and presents the certificate.
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != wantServer || rc.Insecure || !bytes.Equal(rc.CAData, cluster.CertificateAuthorityData) || len(rc.CertData) == 0 || len(rc.KeyData) == 0 {
		t.Errorf("REST config from %s: host %q, insecure %v, CA %d bytes, cert %d bytes, key %d bytes", path, rc.Host, rc.Insecure, len(rc.CAData), len(rc.CertData), len(rc.KeyData))
	}
	return cfg, cert
}

func adminCredentials(t *testing.T, path string) (certPEM, keyPEM []byte) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	auth := cfg.AuthInfos[AdminUser]
	if auth == nil {
		t.Fatalf("%s has no user %s", path, AdminUser)
	}
	return auth.ClientCertificateData, auth.ClientKeyData
}

func ensureKubeconfig(t *testing.T, path, server string, p *PKI) {
	t.Helper()
	if err := EnsureAdminKubeconfig(path, server, p); err != nil {
		t.Fatalf("EnsureAdminKubeconfig(%s, %s): %v", path, server, err)
	}
}

func TestEnsureAdminKubeconfig(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, filepath.Join(dir, "pki"), testHosts)
	path := filepath.Join(dir, "admin.kubeconfig")
	const url1, url2 = "https://127.0.0.1:6443", "https://cp.example.com:7443"

	ensureKubeconfig(t, path, url1, p)
	adminKubeconfig(t, path, p, url1)
	first := mustRead(t, path)
	firstInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	cert1, key1 := adminCredentials(t, path)

	t.Run("same server leaves the file alone", func(t *testing.T) {
		ensureKubeconfig(t, path, url1, p)
		if !bytes.Equal(mustRead(t, path), first) {
			t.Error("kubeconfig changed")
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(info, firstInfo) {
			t.Error("kubeconfig rewritten with the same contents")
		}
	})

	t.Run("another server reuses the credentials", func(t *testing.T) {
		ensureKubeconfig(t, path, url2, p)
		adminKubeconfig(t, path, p, url2)
		cert2, key2 := adminCredentials(t, path)
		if !bytes.Equal(cert2, cert1) || !bytes.Equal(key2, key1) {
			t.Error("client certificate or key reissued for a new server URL")
		}
	})

	t.Run("a new CA reissues the certificate", func(t *testing.T) {
		p2 := ensurePKI(t, filepath.Join(dir, "pki2"), testHosts)
		if p2.CA.Cert.Equal(p.CA.Cert) {
			t.Fatal("a new PKI dir has the same CA")
		}
		ensureKubeconfig(t, path, url2, p2)
		_, cert := adminKubeconfig(t, path, p2, url2)
		cert3, key3 := adminCredentials(t, path)
		if bytes.Equal(cert3, cert1) || bytes.Equal(key3, key1) {
			t.Error("client certificate or key signed by the old CA kept")
		}
		if err := verify(cert, p.CA, "", x509.ExtKeyUsageClientAuth); err == nil {
			t.Error("new client certificate verifies against the old CA")
		}
	})
}

func TestEnsureAdminKubeconfigReplacesUnusableCredentials(t *testing.T) {
	const server = "https://127.0.0.1:6443"
	cases := []struct {
		name string
		// tamper changes the admin credentials of a kubeconfig written
		// by EnsureAdminKubeconfig.
		tamper func(t *testing.T, p *PKI, auth *clientcmdapi.AuthInfo)
	}{
		{
			name: "close to expiry",
			tamper: func(t *testing.T, p *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData = resignPEM(t, auth.ClientCertificateData, p.CA, time.Now().Add(renewBefore-time.Hour))
			},
		},
		{
			name: "another user",
			tamper: func(t *testing.T, p *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData, auth.ClientKeyData = issueClient(t, p.CA, "mallory", []string{AdminGroup})
			},
		},
		{
			name: "not in system:masters",
			tamper: func(t *testing.T, p *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData, auth.ClientKeyData = issueClient(t, p.CA, AdminUser, []string{"viewers"})
			},
		},
		{
			name: "signed by the front proxy CA",
			tamper: func(t *testing.T, p *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData, auth.ClientKeyData = issueClient(t, p.FrontProxyCA, AdminUser, []string{AdminGroup})
			},
		},
		{
			name: "no key",
			tamper: func(_ *testing.T, _ *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientKeyData = nil
			},
		},
		{
			name: "certificate not PEM",
			tamper: func(_ *testing.T, _ *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData = []byte("garbage")
			},
		},
		{
			name: "token instead of certificate",
			tamper: func(_ *testing.T, _ *PKI, auth *clientcmdapi.AuthInfo) {
				auth.ClientCertificateData, auth.ClientKeyData, auth.Token = nil, nil, "abc"
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := ensurePKI(t, filepath.Join(dir, "pki"), testHosts)
			path := filepath.Join(dir, "admin.kubeconfig")
			ensureKubeconfig(t, path, server, p)
			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, p, cfg.AuthInfos[AdminUser])
			tampered := cfg.AuthInfos[AdminUser].ClientCertificateData
			if err := clientcmd.WriteToFile(*cfg, path); err != nil {
				t.Fatal(err)
			}

			ensureKubeconfig(t, path, server, p)
			_, cert := adminKubeconfig(t, path, p, server)
			if got, _ := adminCredentials(t, path); bytes.Equal(got, tampered) {
				t.Error("unusable client certificate kept")
			}
			if remaining := time.Until(cert.NotAfter); remaining < leafValidity-time.Hour {
				t.Errorf("new client certificate expires in %s, want about %s", remaining, leafValidity)
			}
			cfg, err = clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if auth := cfg.AuthInfos[AdminUser]; auth.Token != "" {
				t.Error("stale token kept beside the new certificate")
			}
		})
	}
}

func TestEnsureAdminKubeconfigKeepsCertificateAfterRenewBefore(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, filepath.Join(dir, "pki"), testHosts)
	path := filepath.Join(dir, "admin.kubeconfig")
	ensureKubeconfig(t, path, "https://127.0.0.1:6443", p)
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	auth := cfg.AuthInfos[AdminUser]
	auth.ClientCertificateData = resignPEM(t, auth.ClientCertificateData, p.CA, time.Now().Add(renewBefore+48*time.Hour))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	kept := auth.ClientCertificateData

	ensureKubeconfig(t, path, "https://127.0.0.1:6443", p)
	if got, _ := adminCredentials(t, path); !bytes.Equal(got, kept) {
		t.Error("client certificate valid for longer than renewBefore was reissued")
	}
}

func TestEnsureAdminKubeconfigRefusesCorruptFile(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, filepath.Join(dir, "pki"), testHosts)
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(path, []byte("clusters: [this is not\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := EnsureAdminKubeconfig(path, "https://127.0.0.1:6443", p)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("EnsureAdminKubeconfig over a corrupt file: err = %v, want one naming %s", err, path)
	}
}

// resignPEM returns the PEM certificate for the same key and names as
// certPEM, signed by signer and expiring at notAfter.
func resignPEM(t *testing.T, certPEM []byte, signer *Authority, notAfter time.Time) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.crt")
	if err := os.WriteFile(path, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	resign(t, path, signer, notAfter)
	return mustRead(t, path)
}

func issueClient(t *testing.T, ca *Authority, user string, groups []string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.IssueClientCertificate(user, groups)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func TestUserKubeconfig(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	const server = "https://127.0.0.1:7443"
	data, err := UserKubeconfig(server, p.CA, "alice", []string{"dev", "ops"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || ctx.AuthInfo != "alice" || cfg.Clusters[ctx.Cluster] == nil || cfg.AuthInfos["alice"] == nil {
		t.Fatalf("current context %q does not name user alice and a cluster:\n%s", cfg.CurrentContext, data)
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos["alice"]
	if cluster.Server != server || !bytes.Equal(cluster.CertificateAuthorityData, p.CA.CertPEM()) {
		t.Errorf("cluster: server %q and %d bytes of CA, want %q and the CA", cluster.Server, len(cluster.CertificateAuthorityData), server)
	}
	cert := parseCertPEM(t, auth.ClientCertificateData)
	if cert.Subject.CommonName != "alice" || !slices.Equal(slices.Sorted(slices.Values(cert.Subject.Organization)), []string{"dev", "ops"}) {
		t.Errorf("client certificate for CN %q O %q, want alice in dev and ops", cert.Subject.CommonName, cert.Subject.Organization)
	}
	if remaining := time.Until(cert.NotAfter); remaining > 2*time.Hour || remaining < time.Hour {
		t.Errorf("client certificate expires in %s, want 2h", remaining)
	}
	if err := verify(cert, p.CA, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("client certificate does not verify against the CA: %v", err)
	}
	if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
		t.Errorf("client certificate and key are not a pair: %v", err)
	}

	if _, err := UserKubeconfig(server, p.CA, "alice", nil, 0); err == nil || !strings.Contains(err.Error(), `issuing a client certificate for "alice": a certificate's validity must be positive`) {
		t.Errorf("UserKubeconfig with no validity: %v", err)
	}
}
