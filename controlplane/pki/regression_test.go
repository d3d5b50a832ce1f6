package pki

import (
	"bytes"
	"crypto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/util/keyutil"
)

// A CA whose other half is missing is an error, never silently replaced.
func TestEnsurePKIRefusesHalfACA(t *testing.T) {
	for _, ca := range []string{"ca", "etcd-ca", "front-proxy-ca"} {
		for _, missing := range []string{".key", ".crt"} {
			t.Run(ca+missing, func(t *testing.T) {
				dir := t.TempDir()
				ensurePKI(t, dir, testHosts)
				before := snapshot(t, dir)
				path := filepath.Join(dir, ca+missing)
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				_, err := Ensure(dir, Hosts{Serving: testHosts})
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Fatalf("Ensure with %s missing: want an error naming it, got %v", path, err)
				}
				after := snapshot(t, dir)
				delete(before, ca+missing)
				if changed := changedFiles(before, after); len(changed) > 0 {
					t.Fatalf("files changed: %v", changed)
				}
			})
		}
	}
}

// A new sa.key gets a matching sa.pub, or tokens it signs would not verify.
func TestServiceAccountPublicKeyFollowsPrivateKey(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, dir, testHosts)
	oldPub := mustRead(t, p.ServiceAccountPublicKeyFile)
	if err := os.Remove(p.ServiceAccountKeyFile); err != nil {
		t.Fatal(err)
	}
	p = ensurePKI(t, dir, testHosts)
	if bytes.Equal(mustRead(t, p.ServiceAccountPublicKeyFile), oldPub) {
		t.Fatal("sa.pub still holds the public key of the removed sa.key")
	}
	checkServiceAccountPair(t, p)
}

func checkServiceAccountPair(t *testing.T, p *PKI) {
	t.Helper()
	priv, err := keyutil.PrivateKeyFromFile(p.ServiceAccountKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := keyutil.PublicKeysFromFile(p.ServiceAccountPublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, ok := priv.(crypto.Signer)
	if !ok || len(pubs) != 1 || !publicKeysEqual(pubs[0], signer.Public()) {
		t.Fatal("sa.pub is not the public key of sa.key")
	}
}

// A certificate whose key file holds another key is reissued.
func TestEnsurePKIReissuesLeafWithForeignKey(t *testing.T) {
	dir := t.TempDir()
	p := ensurePKI(t, dir, testHosts)
	if err := os.WriteFile(p.ServingKeyFile, mustRead(t, p.ProxyClientKeyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	p = ensurePKI(t, dir, testHosts)
	checkKeyPair(t, p.ServingCertFile, p.ServingKeyFile)
}

// A CA whose key file holds another key is refused, not replaced: replacing
// it would invalidate everything it signed.
func TestEnsurePKIRefusesCAWithForeignKey(t *testing.T) {
	dir := t.TempDir()
	ensurePKI(t, dir, testHosts)
	caKey := filepath.Join(dir, "ca.key")
	if err := os.WriteFile(caKey, mustRead(t, filepath.Join(dir, "etcd-ca.key")), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err := Ensure(dir, Hosts{Serving: testHosts})
	if err == nil || !strings.Contains(err.Error(), "does not belong to the key") || !strings.Contains(err.Error(), caKey) {
		t.Fatalf("Ensure with a foreign CA key: %v; want an error naming %s", err, caKey)
	}
	if changed := changedFiles(before, snapshot(t, dir)); len(changed) > 0 {
		t.Fatalf("files changed: %v", changed)
	}
}

// Groups come back sorted from the certificate; a multi-group certificate
// must still count as valid, or it would be reissued on every start.
func TestStillValidComparesGroupsAsSets(t *testing.T) {
	p := ensurePKI(t, t.TempDir(), testHosts)
	spec := leafSpec{commonName: "alice", organization: []string{"zeta", "alpha"}}
	cert, _, err := p.CA.issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !p.CA.stillValid(cert, spec) {
		t.Fatalf("certificate for groups %v (encoded as %v) judged invalid", spec.organization, cert.Subject.Organization)
	}
}

// The authorities are prepared together: every one that is broken is
// named at once, not only the first, so one start tells what to restore.
func TestEnsurePKINamesEveryBrokenAuthority(t *testing.T) {
	dir := t.TempDir()
	ensurePKI(t, dir, testHosts)
	var missing []string
	for _, name := range []string{"ca.key", "etcd-ca.crt"} {
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		missing = append(missing, path)
	}
	_, err := Ensure(dir, Hosts{Serving: testHosts})
	for _, path := range missing {
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("Ensure with %v missing: want an error naming %s, got %v", missing, path, err)
		}
	}
}
