package install

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// servingCertificate is a serving certificate for one host and the CA that
// signed it, in PEM.
type servingCertificate struct {
	cert, key, ca []byte
}

// newServingCertificate makes a CA for host alone and a serving certificate
// for host (and the other names given, such as the name the API server
// calls it by) signed by it: an IP address SAN for each IP address, a DNS
// name SAN for each other name. The CA's key is dropped, so the CA trusts
// nothing else.
//
// client-go's cert.GenerateSelfSignedCertKey does the same with RSA-2048
// keys, which take about 0.4 s to generate on a loaded 2-core machine, most
// of a test server's start; P-256 keys take microseconds. The CA comes from
// client-go's helper; client-go has none to sign a certificate with it.
func newServingCertificate(host string, others ...string) (*servingCertificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "webhook-ca@" + host}, caKey)
	if err != nil {
		return nil, fmt.Errorf("making a CA for %s: %w", host, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)), // positive, as RFC 5280 requires
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.NotBefore,
		// A test suite's lifetime, with room; the CA lasts ten years.
		NotAfter:              ca.NotBefore.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, name := range append([]string{host}, others...) {
		if ip := net.ParseIP(name); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, name)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("signing a serving certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	s := &servingCertificate{}
	if s.cert, err = cert.EncodeCertificates(leaf); err != nil {
		return nil, err
	}
	if s.ca, err = cert.EncodeCertificates(ca); err != nil {
		return nil, err
	}
	if s.key, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, err
	}
	return s, nil
}
