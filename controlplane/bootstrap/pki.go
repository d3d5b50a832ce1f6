package bootstrap

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/util/keyutil"
)

// FrontProxyClientName is the common name of the certificate the aggregator
// presents to aggregated API servers; they must allow it in
// --requestheader-allowed-names.
const FrontProxyClientName = "front-proxy-client"

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

// EnsurePKI loads the credentials under dir, creating what is missing. The
// serving certificate is reissued when it lacks one of servingHosts (DNS
// names or IPs) or is close to expiry; authorities and the service-account
// key are never replaced, so tokens and kubeconfigs stay valid across restarts.
func EnsurePKI(dir string, servingHosts []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	p := &PKI{
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
	var err error
	if p.CA, err = loadOrCreateAuthority(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "sample-generic-controlplane-ca"); err != nil {
		return nil, err
	}
	if p.FrontProxyCA, err = loadOrCreateAuthority(filepath.Join(dir, "front-proxy-ca.crt"), filepath.Join(dir, "front-proxy-ca.key"), "sample-generic-controlplane-front-proxy-ca"); err != nil {
		return nil, err
	}
	if p.EtcdCA, err = loadOrCreateAuthority(filepath.Join(dir, "etcd-ca.crt"), filepath.Join(dir, "etcd-ca.key"), "sample-generic-controlplane-etcd-ca"); err != nil {
		return nil, err
	}

	serving := leafSpec{commonName: "sample-generic-controlplane", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range servingHosts {
		if ip := net.ParseIP(h); ip != nil {
			serving.ips = append(serving.ips, ip)
		} else {
			serving.dnsNames = append(serving.dnsNames, h)
		}
	}
	if err := p.CA.ensureLeaf(p.ServingCertFile, p.ServingKeyFile, serving); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	proxyClient := leafSpec{commonName: FrontProxyClientName, usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if err := p.FrontProxyCA.ensureLeaf(p.ProxyClientCertFile, p.ProxyClientKeyFile, proxyClient); err != nil {
		return nil, fmt.Errorf("front proxy client certificate: %w", err)
	}
	peer := leafSpec{
		commonName: "etcd-peer",
		ips:        []net.IP{net.IPv4(127, 0, 0, 1)},
		usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if err := p.EtcdCA.ensureLeaf(p.EtcdPeerCertFile, p.EtcdPeerKeyFile, peer); err != nil {
		return nil, fmt.Errorf("etcd peer certificate: %w", err)
	}
	if err := ensureServiceAccountKey(p.ServiceAccountKeyFile, p.ServiceAccountPublicKeyFile); err != nil {
		return nil, err
	}
	return p, nil
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
		if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
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
	return writeFileAtomic(pubFile, pubPEM, 0o644)
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// into place, so a crash never leaves a half-written credential behind.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after a successful rename
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close() //nolint:errcheck
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close() //nolint:errcheck
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close() //nolint:errcheck
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
