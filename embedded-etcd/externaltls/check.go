package externaltls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"time"
)

// CheckTimeout bounds Check: the dials, handshakes and first answers of the
// members, which Check asks at once. A member on a network that works
// answers in milliseconds.
const CheckTimeout = 5 * time.Second

// http2Preface is what a gRPC client sends first once TLS is up: HTTP/2's
// client preface and an empty SETTINGS frame. The member answers with a
// SETTINGS frame of its own, unless it refuses the client's certificate.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// Check reads files (Files.ClientConfig), then makes the TLS handshake of
// the etcd client with the members at the https:// endpoints, as they
// come: the first member that answers decides. Since with TLS 1.3 a member
// refuses a client certificate only after the client's side of the
// handshake is done, Check also sends the first bytes of a gRPC
// connection, and reads the member's answer.
//
// It returns an *Error when a file cannot be used or the handshake fails
// in a way that only a change of flags mends: the member's certificate is
// not signed by the CA of --etcd-cafile, or not for its address; the
// member requires a client certificate, or refuses the one given; it does
// not speak TLS. It returns nil when the handshake succeeds, and also when
// no member answers within CheckTimeout or before ctx ends, or one fails
// otherwise: an etcd that is not up yet is for the etcd client to wait for,
// as it does without Check. Endpoints of other schemes are not dialed.
func Check(ctx context.Context, endpoints []string, files Files) error {
	config, err := files.ClientConfig()
	if err != nil {
		return err
	}
	var targets []target
	for _, endpoint := range endpoints {
		if t, ok := parseTarget(endpoint); ok {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if config == nil {
		// The etcd client secures an https endpoint without files too:
		// with the system's CAs and no client certificate.
		config = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	// All at once, so that members that do not answer cost CheckTimeout
	// in all rather than each; the answers are taken in endpoint order.
	results := make([]chan answer, len(targets))
	for i, t := range targets {
		results[i] = make(chan answer, 1)
		go func() { results[i] <- t.handshake(ctx, config) }()
	}
	for i, t := range targets {
		a := <-results[i]
		if a.err == nil {
			return nil
		}
		if e := classify(t, files, a); e != nil {
			return e
		}
	}
	return nil
}

// target is an https endpoint to dial.
type target struct {
	endpoint string
	// address is host:port, with the port https implies when it has none.
	address string
	// host is what the member's certificate must be valid for.
	host string
}

func parseTarget(endpoint string) (target, bool) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return target{}, false
	}
	address := u.Host
	if u.Port() == "" {
		address = net.JoinHostPort(u.Hostname(), "443")
	}
	return target{endpoint: endpoint, address: address, host: u.Hostname()}, true
}

// answer is how a member took the handshake.
type answer struct {
	// err is why the handshake or the member's first answer failed.
	err error
	// certificateRequested: the member asked for a client certificate.
	certificateRequested bool
}

// handshake makes the TLS handshake with the member at t as the etcd
// client does (gRPC's TLS credentials: the endpoint's host as server name,
// ALPN h2), then sends http2Preface and waits for the member's first
// bytes, through which a refusal of the client's certificate comes.
func (t target) handshake(ctx context.Context, base *tls.Config) (a answer) {
	config := base.Clone()
	if config.ServerName == "" {
		config.ServerName = t.host
	}
	config.NextProtos = []string{"h2"}
	// Called when the member asks for a client certificate: with TLS 1.2,
	// Go's servers refuse a missing one with "handshake failure", which
	// says nothing of certificates.
	getCertificate := config.GetClientCertificate
	config.GetClientCertificate = func(info *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		a.certificateRequested = true
		if getCertificate != nil {
			return getCertificate(info)
		}
		return &tls.Certificate{}, nil // none: Files set no certificate
	}
	conn, err := (&tls.Dialer{Config: config}).DialContext(ctx, "tcp", t.address)
	if err != nil {
		a.err = err
		return a
	}
	defer conn.Close() //nolint:errcheck // only read from
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			a.err = err
			return a
		}
	}
	if _, err := conn.Write([]byte(http2Preface)); err != nil {
		a.err = err
		return a
	}
	_, a.err = conn.Read(make([]byte, 1))
	return a
}

// clientCertRefusals are the alerts a member sends about the client's
// certificate, by their text in crypto/tls (RFC 8446, section 6.2); Go's
// etcd sends "certificate required" for a missing one (with TLS 1.3; with
// 1.2, "handshake failure"), "unknown certificate authority" or "bad
// certificate" for one it does not trust, "expired certificate" for one
// that expired.
var clientCertRefusals = map[string]bool{
	"tls: bad certificate":               true,
	"tls: unsupported certificate":       true,
	"tls: revoked certificate":           true,
	"tls: expired certificate":           true,
	"tls: unknown certificate":           true,
	"tls: unknown certificate authority": true,
	"tls: access denied":                 true,
	"tls: certificate required":          true,
}

// classify returns the *Error that a, the answer of the member at t, is,
// or nil when its error may heal (or Check does not know that it cannot):
// the member is not reachable, or closed the connection without saying why.
func classify(t target, files Files, a answer) *Error {
	err := a.err
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		recordHeader     tls.RecordHeaderError
		op               *net.OpError
	)
	switch {
	case errors.As(err, &unknownAuthority):
		if files.CAFile == "" {
			return newError(CAFileFlag, t.endpoint, err, "%s is not set, and the system's CAs do not trust the certificate of the etcd member at %s (%v): set %s to the CA that signed the members' serving certificates (etcd's --cert-file)", CAFileFlag, t.endpoint, err, CAFileFlag)
		}
		return newError(CAFileFlag, t.endpoint, err, "%s=%s does not trust the certificate of the etcd member at %s (%v): set it to the CA that signed the members' serving certificates (etcd's --cert-file)", CAFileFlag, files.CAFile, t.endpoint, err)
	case errors.As(err, &hostname):
		return newError(ServersFlag, t.endpoint, err, "%s: the certificate of the etcd member at %s is not valid for %s (%v): name the member by an address or name its certificate holds, or give it a certificate for %s", ServersFlag, t.endpoint, t.host, err, t.host)
	case errors.As(err, &invalid):
		hint := "give the member a certificate for serving clients that is (etcd's --cert-file)"
		if invalid.Reason == x509.Expired {
			hint = "renew it (etcd's --cert-file), or set this machine's clock right"
		}
		return newError("", t.endpoint, err, "the certificate of the etcd member at %s is not valid (%v): %s", t.endpoint, err, hint)
	case errors.As(err, &recordHeader):
		return newError(ServersFlag, t.endpoint, err, "%s: the etcd member at %s does not answer with TLS (%v): write http:// for a member that serves clients without TLS", ServersFlag, t.endpoint, err)
	case errors.As(err, &op) && op.Op == "remote error" && refusesClientCertificate(op.Err.Error(), a.certificateRequested && files.CertFile == ""):
		if files.CertFile == "" {
			return newError(CertFileFlag, t.endpoint, err, "the etcd member at %s requires a client certificate (%v): set %s and %s to a certificate signed by a CA it trusts (etcd's --trusted-ca-file) and its key", t.endpoint, err, CertFileFlag, KeyFileFlag)
		}
		return newError(CertFileFlag, t.endpoint, err, "%s=%s: the etcd member at %s refuses this client certificate (%v): set a certificate for client authentication, signed by a CA the member trusts (etcd's --trusted-ca-file), and not expired", CertFileFlag, files.CertFile, t.endpoint, err)
	}
	return nil
}

// refusesClientCertificate reports whether alert, the text of an alert the
// member sent, refuses the client's certificate; noneSent says that the
// member asked for one and the client had none to send.
func refusesClientCertificate(alert string, noneSent bool) bool {
	return clientCertRefusals[alert] || noneSent && alert == "tls: handshake failure"
}
