// Package pki creates, on a control plane's first start, the credentials
// it needs (certificate authorities, serving and client certificates, the
// service-account signing key, the admin kubeconfig) and reuses them on every
// later start.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

const (
	// leafValidity is how long issued serving and client certificates last.
	leafValidity = 365 * 24 * time.Hour
	// renewBefore is how close to expiry a certificate is reissued at start.
	renewBefore = 30 * 24 * time.Hour
)

// Authority is a certificate authority whose key lives on disk beside its certificate.
type Authority struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	KeyFile  string
}

// CertPEM returns the PEM encoding of the authority's certificate.
func (a *Authority) CertPEM() []byte { return encodeCertPEM(a.Cert) }

// loadOrCreateAuthority reads the CA from certFile/keyFile, or creates a new
// one named commonName when neither exists. When only one of the two files
// exists it fails: replacing a CA would silently invalidate every
// certificate and kubeconfig it ever signed.
func loadOrCreateAuthority(certFile, keyFile, commonName string) (*Authority, error) {
	a := &Authority{CertFile: certFile, KeyFile: keyFile}
	certExists, keyExists := fileExists(certFile), fileExists(keyFile)
	if certExists != keyExists {
		present, missing := certFile, keyFile
		if keyExists {
			present, missing = keyFile, certFile
		}
		return nil, fmt.Errorf("CA %s exists but %s is missing: restore it, or remove both to create a new CA (which invalidates every certificate and kubeconfig it signed)", present, missing)
	}
	if certExists {
		cert, key, err := loadPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("CA: %w", err)
		}
		a.Cert, a.Key = cert, key
		return a, nil
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %q: %w", commonName, err)
	}
	if err := writePair(certFile, keyFile, encodeCertPEM(cert), key); err != nil {
		return nil, err
	}
	a.Cert, a.Key = cert, key
	return a, nil
}

// leafSpec describes a certificate the authority issues.
type leafSpec struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	usages       []x509.ExtKeyUsage
	// withCA writes the authority's certificate after the leaf's.
	withCA bool
	// validity is how long the certificate lasts; leafValidity if zero.
	validity time.Duration
}

// addHosts adds DNS names and IPs, each once.
func (s *leafSpec) addHosts(hosts []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(s.ips, ip.Equal) {
				s.ips = append(s.ips, ip)
			}
		} else if !slices.Contains(s.dnsNames, h) {
			s.dnsNames = append(s.dnsNames, h)
		}
	}
}

// issue signs a new certificate for a new key.
func (a *Authority) issue(spec leafSpec) (*x509.Certificate, crypto.Signer, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("generating serial number: %w", err)
	}
	validity := spec.validity
	if validity == 0 {
		validity = leafValidity
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
		// Backdate a little so a clock that is slightly behind still accepts it.
		NotBefore:   now.Add(-5 * time.Minute).UTC(),
		NotAfter:    now.Add(validity).UTC(),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: spec.usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, key.Public(), a.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate for %q: %w", spec.commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// IssueClientCertificate returns a PEM certificate and key that authenticate
// as user in groups to a server trusting this authority, for a year.
func (a *Authority) IssueClientCertificate(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	return a.issueClient(user, groups, leafValidity)
}

// IssueClientCertificateValidFor is IssueClientCertificate for a
// certificate that lasts validity. It fails when validity is not positive,
// or when the certificate would outlast the authority: the server refuses
// it once the CA has expired, whatever the certificate says.
func (a *Authority) IssueClientCertificateValidFor(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if validity <= 0 {
		return nil, nil, fmt.Errorf("a certificate's validity must be positive, got %s", validity)
	}
	if time.Now().Add(validity).After(a.Cert.NotAfter) {
		return nil, nil, fmt.Errorf("a certificate valid for %s would outlast the CA, which expires at %s: ask for at most %s", validity, a.Cert.NotAfter.UTC().Format(time.RFC3339), time.Until(a.Cert.NotAfter).Truncate(time.Hour))
	}
	return a.issueClient(user, groups, validity)
}

func (a *Authority) issueClient(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	cert, key, err := a.issue(leafSpec{commonName: user, organization: groups, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, validity: validity})
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCertPEM(cert), keyPEM, nil
}

// ensureLeaf reuses the certificate in certFile when this authority signed it,
// it is not close to expiry, it covers spec and keyFile holds its key;
// otherwise it issues a new one.
func (a *Authority) ensureLeaf(certFile, keyFile string, spec leafSpec) error {
	cert, _, err := loadPair(certFile, keyFile)
	if err == nil && a.stillValid(cert, spec) {
		if spec.withCA && !a.chainedIn(certFile) {
			// Written before the chain was: add it, keep the certificate.
			return atomicfile.Write(certFile, a.chain(cert), 0o644)
		}
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errKeyMismatch) {
		return err
	}
	cert, key, err := a.issue(spec)
	if err != nil {
		return err
	}
	certPEM := encodeCertPEM(cert)
	if spec.withCA {
		certPEM = a.chain(cert)
	}
	return writePair(certFile, keyFile, certPEM, key)
}

// chain is cert followed by the authority's certificate.
func (a *Authority) chain(cert *x509.Certificate) []byte {
	return append(encodeCertPEM(cert), a.CertPEM()...)
}

// chainedIn reports whether certFile holds the authority's certificate after its leaf.
func (a *Authority) chainedIn(certFile string) bool {
	certs, err := certutil.CertsFromFile(certFile)
	return err == nil && len(certs) == 2 && certs[1].Equal(a.Cert)
}

func (a *Authority) stillValid(cert *x509.Certificate, spec leafSpec) bool {
	if cert.CheckSignatureFrom(a.Cert) != nil || time.Until(cert.NotAfter) < renewBefore {
		return false
	}
	// The encoding sorts the organizations; compare them as sets.
	if cert.Subject.CommonName != spec.commonName || !sets.New(cert.Subject.Organization...).Equal(sets.New(spec.organization...)) {
		return false
	}
	for _, name := range spec.dnsNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// newKey returns an ECDSA P-256 key: as strong as RSA-3072 for TLS and
// service-account tokens, and a thousand times faster to generate, which is
// what keeps the first start short.
func newKey() (crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	return key, nil
}

// errKeyMismatch: a certificate and the key beside it do not belong together.
var errKeyMismatch = errors.New("does not belong to the key")

// loadPair reads a certificate and its key, and checks that they belong
// together (errKeyMismatch otherwise).
func loadPair(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		if _, statErr := os.Stat(certFile); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, statErr
		}
		return nil, nil, fmt.Errorf("reading certificate %s: %w", certFile, err)
	}
	keyAny, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading key %s (beside %s): %w", keyFile, certFile, err)
	}
	key, ok := keyAny.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("key %s cannot sign", keyFile)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, nil, fmt.Errorf("certificate %s %w %s", certFile, errKeyMismatch, keyFile)
	}
	return certs[0], key, nil
}

func writePair(certFile, keyFile string, certPEM []byte, key crypto.Signer) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	// The key first: a certificate without its key on disk would be
	// reused at the next start and fail there.
	if err := atomicfile.Write(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(certFile, certPEM, 0o644)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}

func encodeCertPEM(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: cert.Raw})
}

func encodePublicKeyPEM(key crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
