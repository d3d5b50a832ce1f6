package pki

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

// testHosts are what the control plane passes for a loopback server with
// --tls-san=cp.example.com,192.0.2.10.
var testHosts = []string{"localhost", "127.0.0.1", "::1", "cp.example.com", "192.0.2.10"}

// pkiFiles are every file Ensure writes, with the mode it must have.
var pkiFiles = map[string]os.FileMode{
	"ca.crt":                 0o644,
	"ca.key":                 0o600,
	"front-proxy-ca.crt":     0o644,
	"front-proxy-ca.key":     0o600,
	"etcd-ca.crt":            0o644,
	"etcd-ca.key":            0o600,
	"apiserver.crt":          0o644,
	"apiserver.key":          0o600,
	"front-proxy-client.crt": 0o644,
	"front-proxy-client.key": 0o600,
	"etcd-peer.crt":          0o644,
	"etcd-peer.key":          0o600,
	"sa.key":                 0o600,
	"sa.pub":                 0o644,
}

func ensurePKI(t *testing.T, dir string, hosts []string) *PKI {
	t.Helper()
	p, err := Ensure(dir, Hosts{Serving: hosts})
	if err != nil {
		t.Fatalf("Ensure(%s, %q): %v", dir, hosts, err)
	}
	return p
}

// snapshot returns the contents of every file in dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// changedFiles lists the names whose contents differ between two snapshots,
// including files that appeared or disappeared.
func changedFiles(before, after map[string][]byte) []string {
	var changed []string
	for name, data := range after {
		if old, ok := before[name]; !ok || !bytes.Equal(old, data) {
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed
}

// loadCert returns the certificate in path: the leaf, for the serving
// certificate, which its CA follows (TestServingCertificateCarriesCA).
func loadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return certs[0]
}

// The CA follows the serving certificate, so that a joining server can pin
// it in the handshake; no other certificate carries one. A serving
// certificate written without it (by an earlier release) gets it, and
// stays the same certificate.
func TestServingCertificateCarriesCA(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, dir, testHosts)
	chain := func() []*x509.Certificate {
		t.Helper()
		certs, err := certutil.CertsFromFile(p.ServingCertFile)
		if err != nil {
			t.Fatal(err)
		}
		return certs
	}
	certs := chain()
	if len(certs) != 2 || !certs[1].Equal(p.CA.Cert) {
		t.Fatalf("serving certificate file: want the leaf and the CA, got %d certificates", len(certs))
	}
	for _, single := range []string{p.ProxyClientCertFile, p.EtcdPeerCertFile} {
		if got, err := certutil.CertsFromFile(single); err != nil || len(got) != 1 {
			t.Errorf("%s: want exactly one certificate, got %d (%v)", single, len(got), err)
		}
	}

	// As an earlier release wrote it: the leaf alone.
	if err := os.WriteFile(p.ServingCertFile, encodeCertPEM(certs[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	ensurePKI(t, dir, testHosts)
	again := chain()
	if len(again) != 2 || !again[0].Equal(certs[0]) || !again[1].Equal(p.CA.Cert) {
		t.Fatalf("after a restart: want the same leaf followed by the CA, got %d certificates", len(again))
	}
}

func parseCertPEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		t.Fatalf("parsing certificate: %v", err)
	}
	if len(certs) != 1 {
		t.Fatalf("want exactly one certificate, got %d", len(certs))
	}
	return certs[0]
}

// verify checks cert against roots for name (a DNS name or an IP, or
// empty for a client certificate) and usage.
func verify(cert *x509.Certificate, roots *Authority, name string, usage x509.ExtKeyUsage) error {
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// checkKeyPair fails unless keyFile holds the private key of certFile.
func checkKeyPair(t *testing.T, certFile, keyFile string) {
	t.Helper()
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("%s and %s are not a pair: %v", certFile, keyFile, err)
	}
}

func TestEnsurePKICreatesEveryFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "pki")
	p := ensurePKI(t, dir, testHosts)

	checkMode(t, dir, 0o700)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	var want []string
	for name := range pkiFiles {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("files in %s:\n got %q\nwant %q", dir, names, want)
	}
	for name, mode := range pkiFiles {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := info.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %o, want %o", name, got, mode)
		}
		if info.Size() == 0 {
			t.Errorf("%s is empty", name)
		}
	}

	// The PKI names the files it wrote.
	for field, path := range map[string]string{
		"CA.CertFile":                 p.CA.CertFile,
		"CA.KeyFile":                  p.CA.KeyFile,
		"FrontProxyCA.CertFile":       p.FrontProxyCA.CertFile,
		"EtcdCA.CertFile":             p.EtcdCA.CertFile,
		"ServingCertFile":             p.ServingCertFile,
		"ServingKeyFile":              p.ServingKeyFile,
		"ProxyClientCertFile":         p.ProxyClientCertFile,
		"ProxyClientKeyFile":          p.ProxyClientKeyFile,
		"EtcdPeerCertFile":            p.EtcdPeerCertFile,
		"EtcdPeerKeyFile":             p.EtcdPeerKeyFile,
		"ServiceAccountKeyFile":       p.ServiceAccountKeyFile,
		"ServiceAccountPublicKeyFile": p.ServiceAccountPublicKeyFile,
	} {
		if filepath.Dir(path) != dir {
			t.Errorf("%s = %s, want a file in %s", field, path, dir)
		}
		if _, ok := pkiFiles[filepath.Base(path)]; !ok {
			t.Errorf("%s = %s, which Ensure does not write", field, path)
		}
	}
	checkKeyPair(t, p.ServingCertFile, p.ServingKeyFile)
	checkKeyPair(t, p.ProxyClientCertFile, p.ProxyClientKeyFile)
	checkKeyPair(t, p.EtcdPeerCertFile, p.EtcdPeerKeyFile)
	checkKeyPair(t, p.CA.CertFile, p.CA.KeyFile)
	checkKeyPair(t, p.FrontProxyCA.CertFile, p.FrontProxyCA.KeyFile)
	checkKeyPair(t, p.EtcdCA.CertFile, p.EtcdCA.KeyFile)
	if !bytes.Equal(p.CA.CertPEM(), mustRead(t, p.CA.CertFile)) {
		t.Errorf("CA.CertPEM() differs from %s", p.CA.CertFile)
	}
}

func samePublicKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAuthorities(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	cas := map[string]*Authority{"CA": p.CA, "FrontProxyCA": p.FrontProxyCA, "EtcdCA": p.EtcdCA}
	for name, ca := range cas {
		if !ca.Cert.IsCA || !ca.Cert.BasicConstraintsValid {
			t.Errorf("%s is not a CA certificate", name)
		}
		if ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s cannot sign certificates", name)
		}
		if !samePublicKey(ca.Cert.PublicKey, ca.Key.Public()) {
			t.Errorf("%s: key does not belong to the certificate", name)
		}
		for other, oca := range cas {
			if other != name && ca.Cert.Equal(oca.Cert) {
				t.Errorf("%s and %s are the same authority", name, other)
			}
		}
	}
}

func TestServingCertificateCoversEveryHost(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	cert := loadCert(t, p.ServingCertFile)
	for _, tc := range []struct {
		host    string
		roots   *Authority
		wantErr bool
	}{
		{host: "localhost", roots: p.CA},
		{host: "127.0.0.1", roots: p.CA},
		{host: "::1", roots: p.CA},
		{host: "cp.example.com", roots: p.CA},
		{host: "192.0.2.10", roots: p.CA},
		{host: "other.example.com", roots: p.CA, wantErr: true},
		{host: "192.0.2.11", roots: p.CA, wantErr: true},
		// Only the cluster CA vouches for the server.
		{host: "localhost", roots: p.FrontProxyCA, wantErr: true},
		{host: "localhost", roots: p.EtcdCA, wantErr: true},
	} {
		t.Run(tc.host+"/"+tc.roots.Cert.Subject.CommonName, func(t *testing.T) {
			err := verify(cert, tc.roots, tc.host, x509.ExtKeyUsageServerAuth)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("verify(%s against %s) = %v, want error: %v", tc.host, tc.roots.Cert.Subject.CommonName, err, tc.wantErr)
			}
		})
	}
	if slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("serving certificate can be used as a client certificate: %v", cert.ExtKeyUsage)
	}
	if cert.IsCA {
		t.Error("serving certificate is a CA")
	}
	// Hosts are sorted into DNS names and IPs, not both.
	if slices.Contains(cert.DNSNames, "127.0.0.1") || slices.Contains(cert.DNSNames, "::1") {
		t.Errorf("IP addresses listed as DNS names: %q", cert.DNSNames)
	}
}

func TestLeafCertificatesAreIssuedBySeparateAuthorities(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	peer := loadCert(t, p.EtcdPeerCertFile)
	proxy := loadCert(t, p.ProxyClientCertFile)

	if proxy.Subject.CommonName != FrontProxyClientName || FrontProxyClientName != "front-proxy-client" {
		t.Errorf("front proxy client certificate CN = %q, want front-proxy-client", proxy.Subject.CommonName)
	}
	for _, tc := range []struct {
		name    string
		cert    *x509.Certificate
		roots   *Authority
		host    string
		usage   x509.ExtKeyUsage
		wantErr bool
	}{
		{name: "etcd peer as server, etcd CA", cert: peer, roots: p.EtcdCA, host: "127.0.0.1", usage: x509.ExtKeyUsageServerAuth},
		{name: "etcd peer as client, etcd CA", cert: peer, roots: p.EtcdCA, usage: x509.ExtKeyUsageClientAuth},
		// A person's client certificate comes from the cluster CA; the
		// peer port must not trust it, and the cluster must not trust
		// the peer certificate.
		{name: "etcd peer as client, cluster CA", cert: peer, roots: p.CA, usage: x509.ExtKeyUsageClientAuth, wantErr: true},
		{name: "etcd peer as server, cluster CA", cert: peer, roots: p.CA, host: "127.0.0.1", usage: x509.ExtKeyUsageServerAuth, wantErr: true},
		{name: "etcd peer, front proxy CA", cert: peer, roots: p.FrontProxyCA, usage: x509.ExtKeyUsageClientAuth, wantErr: true},
		{name: "front proxy client, front proxy CA", cert: proxy, roots: p.FrontProxyCA, usage: x509.ExtKeyUsageClientAuth},
		{name: "front proxy client, cluster CA", cert: proxy, roots: p.CA, usage: x509.ExtKeyUsageClientAuth, wantErr: true},
		{name: "front proxy client, etcd CA", cert: proxy, roots: p.EtcdCA, usage: x509.ExtKeyUsageClientAuth, wantErr: true},
		{name: "front proxy client as server", cert: proxy, roots: p.FrontProxyCA, usage: x509.ExtKeyUsageServerAuth, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.cert, tc.roots, tc.host, tc.usage)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("verify = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

func TestEnsurePKIAgainChangesNothing(t *testing.T) {
	dir := t.TempDir()
	ensurePKI(t, dir, testHosts)
	before := snapshot(t, dir)
	// The same hosts in another order, and a subset, are still covered.
	for _, hosts := range [][]string{testHosts, {"192.0.2.10", "cp.example.com", "::1", "127.0.0.1", "localhost"}, {"localhost"}} {
		ensurePKI(t, dir, hosts)
		if changed := changedFiles(before, snapshot(t, dir)); len(changed) != 0 {
			t.Errorf("Ensure(%q) on an existing PKI changed %q", hosts, changed)
		}
	}
}

func TestEnsurePKIReissuesServingCertificateForNewHost(t *testing.T) {
	for _, newHost := range []string{"new.example.com", "198.51.100.7", "2001:db8::1"} {
		t.Run(newHost, func(t *testing.T) {
			dir := t.TempDir()
			ensurePKI(t, dir, testHosts)
			before := snapshot(t, dir)

			p := ensurePKI(t, dir, append(slices.Clone(testHosts), newHost))
			changed := changedFiles(before, snapshot(t, dir))
			if want := []string{"apiserver.crt", "apiserver.key"}; !slices.Equal(changed, want) {
				t.Errorf("adding host %s changed %q, want only %q", newHost, changed, want)
			}
			cert := loadCert(t, p.ServingCertFile)
			for _, host := range append(slices.Clone(testHosts), newHost) {
				if err := verify(cert, p.CA, host, x509.ExtKeyUsageServerAuth); err != nil {
					t.Errorf("reissued serving certificate does not cover %s: %v", host, err)
				}
			}
			checkKeyPair(t, p.ServingCertFile, p.ServingKeyFile)
		})
	}
}

// resign replaces the certificate in certFile with one for the same key and
// names, signed by signer, that expires at notAfter; the certificates after
// it (the serving certificate's CA) stay.
func resign(t *testing.T, certFile string, signer *Authority, notAfter time.Time) {
	t.Helper()
	old := loadCert(t, certFile)
	tmpl := *old
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore = time.Now().Add(-2 * leafValidity)
	tmpl.NotAfter = notAfter
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, signer.Cert, old.PublicKey, signer.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := certutil.CertsFromFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	data := encodeCertPEM(cert)
	for _, c := range rest[1:] {
		data = append(data, encodeCertPEM(c)...)
	}
	if err := atomicfile.Write(certFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEnsurePKIRenewsLeafCertificates(t *testing.T) {
	type leaf struct {
		name              string
		certFile, keyFile func(*PKI) string
		issuer            func(*PKI) *Authority
	}
	leaves := []leaf{
		{"serving", func(p *PKI) string { return p.ServingCertFile }, func(p *PKI) string { return p.ServingKeyFile }, func(p *PKI) *Authority { return p.CA }},
		{"front proxy client", func(p *PKI) string { return p.ProxyClientCertFile }, func(p *PKI) string { return p.ProxyClientKeyFile }, func(p *PKI) *Authority { return p.FrontProxyCA }},
		{"etcd peer", func(p *PKI) string { return p.EtcdPeerCertFile }, func(p *PKI) string { return p.EtcdPeerKeyFile }, func(p *PKI) *Authority { return p.EtcdCA }},
	}
	cases := []struct {
		name string
		// tamper rewrites the leaf's certificate.
		tamper      func(t *testing.T, p *PKI, l leaf)
		wantReissue bool
	}{
		{
			name: "expires within renewBefore",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				resign(t, l.certFile(p), l.issuer(p), time.Now().Add(renewBefore-time.Hour))
			},
			wantReissue: true,
		},
		{
			name: "expired",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				resign(t, l.certFile(p), l.issuer(p), time.Now().Add(-time.Hour))
			},
			wantReissue: true,
		},
		{
			name: "signed by another authority",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				other := p.CA
				if l.issuer(p) == p.CA {
					other = p.FrontProxyCA
				}
				resign(t, l.certFile(p), other, time.Now().Add(leafValidity))
			},
			wantReissue: true,
		},
		{
			name: "certificate file removed",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				if err := os.Remove(l.certFile(p)); err != nil {
					t.Fatal(err)
				}
			},
			wantReissue: true,
		},
		{
			name: "key file removed",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				if err := os.Remove(l.keyFile(p)); err != nil {
					t.Fatal(err)
				}
			},
			wantReissue: true,
		},
		{
			name: "expires after renewBefore",
			tamper: func(t *testing.T, p *PKI, l leaf) {
				resign(t, l.certFile(p), l.issuer(p), time.Now().Add(renewBefore+48*time.Hour))
			},
			wantReissue: false,
		},
	}
	for _, l := range leaves {
		for _, tc := range cases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				p := ensurePKI(t, dir, testHosts)
				tc.tamper(t, p, l)
				before := snapshot(t, dir)

				p = ensurePKI(t, dir, testHosts)
				changed := changedFiles(before, snapshot(t, dir))
				certName, keyName := filepath.Base(l.certFile(p)), filepath.Base(l.keyFile(p))
				if !tc.wantReissue {
					if len(changed) != 0 {
						t.Fatalf("changed %q, want nothing", changed)
					}
					return
				}
				for _, name := range changed {
					if name != certName && name != keyName {
						t.Errorf("renewing the %s certificate changed %s", l.name, name)
					}
				}
				if !slices.Contains(changed, certName) {
					t.Fatalf("the %s certificate was not reissued (changed: %q)", l.name, changed)
				}
				cert := loadCert(t, l.certFile(p))
				if remaining := time.Until(cert.NotAfter); remaining < leafValidity-time.Hour {
					t.Errorf("reissued certificate expires in %s, want about %s", remaining, leafValidity)
				}
				if err := cert.CheckSignatureFrom(l.issuer(p).Cert); err != nil {
					t.Errorf("reissued certificate not signed by its authority: %v", err)
				}
				checkKeyPair(t, l.certFile(p), l.keyFile(p))
			})
		}
	}
}

func TestEnsurePKIRefusesCorruptFiles(t *testing.T) {
	cases := []struct {
		file    string
		content string
	}{
		{"ca.key", "not a key"},
		{"ca.crt", "not a certificate"},
		{"front-proxy-ca.key", "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"},
		{"front-proxy-ca.crt", ""},
		{"etcd-ca.key", ""},
		{"etcd-ca.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		{"apiserver.key", "garbage"},
		{"front-proxy-client.key", "garbage"},
		{"etcd-peer.key", "garbage"},
		{"sa.key", "garbage"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			ensurePKI(t, dir, testHosts)
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.content), pkiFiles[tc.file]); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)

			p, err := Ensure(dir, Hosts{Serving: testHosts})
			if err == nil {
				t.Fatalf("Ensure with a corrupt %s succeeded (PKI %+v)", tc.file, p)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name %s: %v", path, err)
			}
			if changed := changedFiles(before, snapshot(t, dir)); len(changed) != 0 {
				t.Errorf("a failed Ensure changed %q", changed)
			}
		})
	}
}

func TestServiceAccountKeyPair(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, dir, testHosts)
	checkServiceAccountPair(t, p)
	// The signing key is its own, not one of the certificates' keys.
	for _, keyFile := range []string{p.CA.KeyFile, p.ServingKeyFile, p.EtcdCA.KeyFile, p.FrontProxyCA.KeyFile} {
		if bytes.Equal(mustRead(t, keyFile), mustRead(t, p.ServiceAccountKeyFile)) {
			t.Errorf("service-account key is the same as %s", keyFile)
		}
	}

	// A lost public key is written again from the private key.
	sa := mustRead(t, p.ServiceAccountKeyFile)
	pub := mustRead(t, p.ServiceAccountPublicKeyFile)
	if err := os.Remove(p.ServiceAccountPublicKeyFile); err != nil {
		t.Fatal(err)
	}
	p = ensurePKI(t, dir, testHosts)
	if !bytes.Equal(mustRead(t, p.ServiceAccountKeyFile), sa) {
		t.Error("service-account key replaced")
	}
	if !bytes.Equal(mustRead(t, p.ServiceAccountPublicKeyFile), pub) {
		t.Error("rewritten sa.pub differs from the original")
	}
}

func TestIssueClientCertificate(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	for _, tc := range []struct {
		user   string
		groups []string
	}{
		{user: "alice", groups: []string{"developers", "operators"}},
		{user: "system:serviceaccount:default:builder", groups: []string{"system:serviceaccounts"}},
		{user: "bob"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			certPEM, keyPEM, err := p.CA.IssueClientCertificate(tc.user, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCertPEM(t, certPEM)
			if cert.Subject.CommonName != tc.user {
				t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tc.user)
			}
			// DER sorts the values of one RDN, so the order of groups is not kept.
			if got, want := slices.Sorted(slices.Values(cert.Subject.Organization)), slices.Sorted(slices.Values(tc.groups)); !slices.Equal(got, want) {
				t.Errorf("O = %q, want %q", cert.Subject.Organization, tc.groups)
			}
			if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
				t.Errorf("ExtKeyUsage = %v, want only client auth", cert.ExtKeyUsage)
			}
			if cert.IsCA {
				t.Error("client certificate is a CA")
			}
			if err := verify(cert, p.CA, "", x509.ExtKeyUsageClientAuth); err != nil {
				t.Errorf("client certificate does not verify against the CA: %v", err)
			}
			if err := verify(cert, p.CA, "localhost", x509.ExtKeyUsageServerAuth); err == nil {
				t.Error("client certificate verifies as a serving certificate")
			}
			if err := verify(cert, p.FrontProxyCA, "", x509.ExtKeyUsageClientAuth); err == nil {
				t.Error("client certificate verifies against the front proxy CA")
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Errorf("certificate and key are not a pair: %v", err)
			}
			if remaining := time.Until(cert.NotAfter); remaining < leafValidity-time.Hour || remaining > leafValidity {
				t.Errorf("certificate expires in %s, want %s", remaining, leafValidity)
			}
			if !cert.NotBefore.Before(time.Now()) {
				t.Errorf("certificate not valid yet: NotBefore %s", cert.NotBefore)
			}
		})
	}
	// Every certificate has its own key and serial.
	a, _, err := p.CA.IssueClientCertificate("alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := p.CA.IssueClientCertificate("alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := parseCertPEM(t, a), parseCertPEM(t, b)
	if ca.SerialNumber.Cmp(cb.SerialNumber) == 0 {
		t.Error("two certificates share a serial number")
	}
	if bytes.Equal(ca.RawSubjectPublicKeyInfo, cb.RawSubjectPublicKeyInfo) {
		t.Error("two certificates share a key")
	}
}

func TestWriteFileAtomicLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for i, data := range []string{"one", "two, longer", "3"} {
		if err := atomicfile.Write(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, path)); got != data {
			t.Errorf("write %d: file holds %q, want %q", i, got, data)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after writes, want 1: %v", len(entries), entries)
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "f")) {
		t.Errorf("writing into a missing directory: err = %v, want one naming the file", err)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %o, want %o", path, got, want)
	}
}

func TestIssueClientCertificateValidFor(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	for _, tc := range []struct {
		name     string
		validity time.Duration
		// wantErr is the error's beginning, "" for none.
		wantErr string
	}{
		{name: "two hours", validity: 2 * time.Hour},
		{name: "zero", validity: 0, wantErr: "a certificate's validity must be positive, got 0s"},
		{name: "negative", validity: -time.Hour, wantErr: "a certificate's validity must be positive, got -1h0m0s"},
		// The CA lasts ten years.
		{name: "past the CA", validity: 11 * 365 * 24 * time.Hour, wantErr: "a certificate valid for 96360h0m0s would outlast the CA, which expires at "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, _, err := p.CA.IssueClientCertificateValidFor("alice", []string{"dev"}, tc.validity)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("IssueClientCertificateValidFor(%s): %v, want %q", tc.validity, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cert := parseCertPEM(t, certPEM)
			if remaining := time.Until(cert.NotAfter); remaining < tc.validity-time.Minute || remaining > tc.validity {
				t.Errorf("certificate expires in %s, want %s", remaining, tc.validity)
			}
			if err := verify(cert, p.CA, "", x509.ExtKeyUsageClientAuth); err != nil {
				t.Errorf("client certificate does not verify against the CA: %v", err)
			}
		})
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadCA(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadCA of an empty directory: %v, want an error wrapping os.ErrNotExist", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("LoadCA created %d files", len(entries))
	}
	p := ensurePKI(t, dir, testHosts)
	ca, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.Equal(p.CA.Cert) || !publicKeysEqual(ca.Key.Public(), p.CA.Key.Public()) || ca.CertFile != p.CA.CertFile || ca.KeyFile != p.CA.KeyFile {
		t.Errorf("LoadCA loaded another CA than Ensure created: %s and %s", ca.CertFile, ca.KeyFile)
	}
}
