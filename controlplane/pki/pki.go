package pki

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/util/keyutil"

	"sigs.k8s.io/sample-generic-controlplane/internal/atomicfile"
)

// FrontProxyClientName is the common name of the certificate the aggregator
// presents to aggregated API servers; they must allow it in
// --requestheader-allowed-names.
const FrontProxyClientName = "front-proxy-client"

// caName names the cluster CA's files; etcdCAName the etcd peer CA's.
const (
	caName     = "ca"
	etcdCAName = "etcd-ca"
)

// PKI is the set of credentials of one control plane, under <data-dir>/pki.
type PKI struct {
	Dir string

	// CA signs the serving certificate and client certificates; clients
	// trust it (it is the CA in admin.kubeconfig) and the server accepts
	// client certificates it signed (--client-ca-file).
	CA *Authority
	// FrontProxyCA signs the aggregator's client certificate towards
	// aggregated API servers (--requestheader-client-ca-file).
	FrontProxyCA *Authority
	// EtcdCA is separate from CA on purpose: a client certificate issued
	// to a person must never open etcd's peer port.
	EtcdCA *Authority

	ServingCertFile, ServingKeyFile         string
	ProxyClientCertFile, ProxyClientKeyFile string
	EtcdPeerCertFile, EtcdPeerKeyFile       string
	// ServiceAccountKeyFile signs tokens; ServiceAccountPublicKeyFile verifies them.
	ServiceAccountKeyFile, ServiceAccountPublicKeyFile string
}

// Hosts are the names certificates are issued for: DNS names or IPs.
type Hosts struct {
	// Serving are the API server's names.
	Serving []string
	// EtcdPeer are the embedded etcd member's names on its peer port,
	// beside 127.0.0.1: its advertised address in a cluster of several.
	EtcdPeer []string
}

// Ensure loads the credentials under dir, creating what is missing. The
// serving and peer certificates are reissued when they lack one of hosts
// or are close to expiry; authorities and the service-account key are
// never replaced, so tokens and kubeconfigs stay valid across restarts. A
// server joining a cluster places the cluster's authorities and
// service-account key in dir first (WriteShared), and Ensure issues its
// own certificates from them.
func Ensure(dir string, hosts Hosts) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	p := Paths(dir)
	// The serving certificate is written with the CA after it, so that a
	// server joining with a token can pin the CA in the TLS handshake
	// before it sends the token (see embedded-etcd/cluster/jointoken).
	serving := leafSpec{commonName: "sample-generic-controlplane", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, withCA: true}
	serving.addHosts(hosts.Serving)
	proxyClient := leafSpec{commonName: FrontProxyClientName, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	peer := leafSpec{
		commonName: "etcd-peer",
		ips:        []net.IP{net.IPv4(127, 0, 0, 1)},
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	peer.addHosts(hosts.EtcdPeer)
	// Each authority with what it issues, and the service-account key, is
	// independent of the others: on a first start they are created
	// together, and their writes (each synced to disk) overlap.
	errs := make([]error, 4)
	var wg sync.WaitGroup
	wg.Go(func() {
		p.CA, errs[0] = ensureAuthorityAndLeaf(dir, caName, "sample-generic-controlplane-ca", "serving certificate", p.ServingCertFile, p.ServingKeyFile, serving)
	})
	wg.Go(func() {
		p.FrontProxyCA, errs[1] = ensureAuthorityAndLeaf(dir, "front-proxy-ca", "sample-generic-controlplane-front-proxy-ca", "front proxy client certificate", p.ProxyClientCertFile, p.ProxyClientKeyFile, proxyClient)
	})
	wg.Go(func() {
		p.EtcdCA, errs[2] = ensureAuthorityAndLeaf(dir, etcdCAName, "sample-generic-controlplane-etcd-ca", "etcd peer certificate", p.EtcdPeerCertFile, p.EtcdPeerKeyFile, peer)
	})
	wg.Go(func() {
		errs[3] = ensureServiceAccountKey(p.ServiceAccountKeyFile, p.ServiceAccountPublicKeyFile)
	})
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Paths names the files of the PKI in dir, without reading or creating
// them; the authorities are not loaded (nil).
func Paths(dir string) *PKI {
	return &PKI{
		Dir:                         dir,
		ServingCertFile:             filepath.Join(dir, "apiserver.crt"),
		ServingKeyFile:              filepath.Join(dir, "apiserver.key"),
		ProxyClientCertFile:         filepath.Join(dir, "front-proxy-client.crt"),
		ProxyClientKeyFile:          filepath.Join(dir, "front-proxy-client.key"),
		EtcdPeerCertFile:            filepath.Join(dir, "etcd-peer.crt"),
		EtcdPeerKeyFile:             filepath.Join(dir, "etcd-peer.key"),
		ServiceAccountKeyFile:       filepath.Join(dir, "sa.key"),
		ServiceAccountPublicKeyFile: filepath.Join(dir, "sa.pub"),
	}
}

// LoadCA reads the cluster CA (the PKI's CA) from the PKI directory dir,
// for a program that issues client certificates beside a running control
// plane. Unlike Ensure it creates nothing: when the CA's files do not exist
// the error wraps os.ErrNotExist.
func LoadCA(dir string) (*Authority, error) {
	a := &Authority{CertFile: filepath.Join(dir, caName+".crt"), KeyFile: filepath.Join(dir, caName+".key")}
	cert, key, err := loadPair(a.CertFile, a.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	a.Cert, a.Key = cert, key
	return a, nil
}

// EtcdCAFile is the etcd peer CA's certificate in the PKI directory dir.
func EtcdCAFile(dir string) string { return filepath.Join(dir, etcdCAName+".crt") }

// ensureAuthorityAndLeaf loads or creates the authority <dir>/<name>.crt
// and .key, then the certificate it issues into certFile and keyFile.
func ensureAuthorityAndLeaf(dir, name, commonName, leaf, certFile, keyFile string, spec leafSpec) (*Authority, error) {
	a, err := loadOrCreateAuthority(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), commonName)
	if err != nil {
		return nil, err
	}
	if err := a.ensureLeaf(certFile, keyFile, spec); err != nil {
		return nil, fmt.Errorf("%s: %w", leaf, err)
	}
	return a, nil
}

func ensureServiceAccountKey(keyFile, pubFile string) error {
	keyAny, err := keyutil.PrivateKeyFromFile(keyFile)
	var key crypto.Signer
	switch {
	case err == nil:
		var ok bool
		if key, ok = keyAny.(crypto.Signer); !ok {
			return fmt.Errorf("service-account key %s cannot sign", keyFile)
		}
	case errors.Is(err, os.ErrNotExist):
		if key, err = newKey(); err != nil {
			return err
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(keyFile, keyPEM, 0o600); err != nil {
			return err
		}
	default:
		return fmt.Errorf("reading service-account key %s: %w", keyFile, err)
	}
	// The public key is always derived from the private one, so a
	// replaced sa.key never leaves a stale sa.pub that rejects new tokens.
	pubPEM, err := encodePublicKeyPEM(key.Public())
	if err != nil {
		return err
	}
	if existing, err := os.ReadFile(pubFile); err == nil && bytes.Equal(existing, pubPEM) {
		return nil
	}
	return atomicfile.Write(pubFile, pubPEM, 0o644)
}
