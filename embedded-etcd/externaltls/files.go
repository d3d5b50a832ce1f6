// Package externaltls checks the TLS with which the control plane and its
// commands reach an external etcd (--etcd-cafile, --etcd-certfile,
// --etcd-keyfile) before they rely on it, and says which flag is wrong.
//
// The etcd client retries a handshake that fails as it retries an etcd that
// is not up yet: a wrong CA or a missing client certificate would show as a
// start that waits, then fails with "context deadline exceeded". Such
// errors never heal, so Check reports them at once; an etcd it cannot reach
// is left to the client, which may see it come up.
package externaltls

import (
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The flags Error names. The control plane, "snapshot save" and the etcd
// commands name them alike.
const (
	ServersFlag  = "--etcd-servers"
	CAFileFlag   = "--etcd-cafile"
	CertFileFlag = "--etcd-certfile"
	KeyFileFlag  = "--etcd-keyfile"
)

// Files are a client's TLS files for an external etcd.
type Files struct {
	// CAFile verifies the members' serving certificates; empty trusts the
	// system's CAs.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key, for
	// members that require one (etcd's --client-cert-auth); both or neither.
	CertFile, KeyFile string
}

// Error is a TLS configuration that cannot work: retrying does not help,
// a flag must change. Its message starts with the flag, or the member, and
// ends with what to write instead.
type Error struct {
	// Flag is the flag to fix, e.g. "--etcd-cafile"; empty when the fix is
	// on the etcd member's side (its certificate expired).
	Flag string
	// Endpoint is the member whose handshake failed; empty when a file
	// could not be used.
	Endpoint string
	// Err is what failed.
	Err error

	msg string
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.Err }

func newError(flag, endpoint string, err error, format string, args ...any) *Error {
	return &Error{Flag: flag, Endpoint: endpoint, Err: err, msg: fmt.Sprintf(format, args...)}
}

// ClientConfig reads the files as the etcd client does (with etcd's
// transport.TLSInfo, as k8s.io/apiserver's storage does), and returns the
// client's TLS configuration: nil when no file is set. A file that cannot
// be used is an *Error naming its flag.
func (f Files) ClientConfig() (*tls.Config, error) {
	if f == (Files{}) {
		return nil, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	config, err := transport.TLSInfo{TrustedCAFile: f.CAFile, CertFile: f.CertFile, KeyFile: f.KeyFile}.ClientConfig()
	if err != nil {
		// check read every file already; a failure here is one it does not know.
		return nil, fmt.Errorf("the TLS configuration of %s, %s and %s: %w", CAFileFlag, CertFileFlag, KeyFileFlag, err)
	}
	return config, nil
}

// check reads each file that is set, so that a file that cannot be used is
// named by its flag. Upstream fails on these too, at once, but names no
// flag ("open x: no such file or directory", "tls: private key does not
// match public key").
func (f Files) check() error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return newError(KeyFileFlag, "", nil, "%s is not set: the client certificate %s=%s needs its key; set both, or neither", KeyFileFlag, CertFileFlag, f.CertFile)
	case f.CertFile == "" && f.KeyFile != "":
		return newError(CertFileFlag, "", nil, "%s is not set: the key %s=%s needs its certificate; set both, or neither", CertFileFlag, KeyFileFlag, f.KeyFile)
	}
	if f.CAFile != "" {
		if _, err := certutil.CertsFromFile(f.CAFile); err != nil {
			return newError(CAFileFlag, "", err, "%s=%s: %v; it must hold the PEM certificate of the CA that signed the etcd members' certificates", CAFileFlag, f.CAFile, err)
		}
	}
	if f.CertFile == "" {
		return nil
	}
	certs, err := certutil.CertsFromFile(f.CertFile)
	if err != nil {
		return newError(CertFileFlag, "", err, "%s=%s: %v; it must hold the PEM client certificate for etcd", CertFileFlag, f.CertFile, err)
	}
	key, err := keyutil.PrivateKeyFromFile(f.KeyFile)
	if err != nil {
		return newError(KeyFileFlag, "", err, "%s=%s: %v; it must hold the PEM private key of %s=%s", KeyFileFlag, f.KeyFile, err, CertFileFlag, f.CertFile)
	}
	if !matches(certs[0].PublicKey, key) {
		err := errors.New("tls: private key does not match public key")
		return newError(KeyFileFlag, "", err, "%s=%s is not the key of the client certificate %s=%s (%v): set the key that belongs to it", KeyFileFlag, f.KeyFile, CertFileFlag, f.CertFile, err)
	}
	return nil
}

// matches reports whether key is the private key of public.
func matches(public crypto.PublicKey, key any) bool {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return false
	}
	p, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && p.Equal(public)
}
