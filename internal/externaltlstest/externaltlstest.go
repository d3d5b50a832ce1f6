// Package externaltlstest gives tests an etcd secured as production etcd
// clusters are: client and peer TLS, client certificates required. Its
// credentials come from the control plane's own PKI code (controlplane/pki),
// so the tests need no certificate code of their own.
package externaltlstest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
)

// ClientName is the common name of the client certificate.
const ClientName = "sample-generic-controlplane"

// Credentials are the files of one etcd cluster's TLS, all signed by one CA.
type Credentials struct {
	// CAFile is the cluster's CA: the members trust client and peer
	// certificates it signed (etcd's --trusted-ca-file and
	// --peer-trusted-ca-file), and clients trust the members' certificates
	// by it (--etcd-cafile).
	CAFile string
	// MemberCertFile and MemberKeyFile are what every member serves clients
	// and its peers with, and presents to its peers as a client: they are
	// valid for server and client authentication, on 127.0.0.1 and the
	// hosts NewCredentials was given. One certificate for all members keeps
	// the tests short; a production cluster gives each its own.
	MemberCertFile, MemberKeyFile string
	// ClientCertFile and ClientKeyFile are a client certificate for the
	// control plane and its commands (--etcd-certfile, --etcd-keyfile).
	ClientCertFile, ClientKeyFile string
}

// NewCredentials creates a CA and the certificates of Credentials under dir,
// the members' valid for 127.0.0.1 and hosts (IP addresses or DNS names).
// Each call creates a CA of its own: credentials of another call are those
// of a foreign cluster.
func NewCredentials(dir string, hosts ...string) (*Credentials, error) {
	// The etcd CA of a control plane's PKI and its peer certificate are
	// what an etcd cluster needs: the peer certificate is for server and
	// client authentication. The PKI's other files are not used.
	p, err := pki.Ensure(filepath.Join(dir, "pki"), pki.Hosts{EtcdPeer: hosts})
	if err != nil {
		return nil, fmt.Errorf("creating the etcd cluster's CA and certificates: %w", err)
	}
	certPEM, keyPEM, err := p.EtcdCA.IssueClientCertificate(ClientName, nil)
	if err != nil {
		return nil, fmt.Errorf("issuing the etcd client certificate: %w", err)
	}
	c := &Credentials{
		CAFile:         p.EtcdCA.CertFile,
		MemberCertFile: p.EtcdPeerCertFile,
		MemberKeyFile:  p.EtcdPeerKeyFile,
		ClientCertFile: filepath.Join(dir, "client.crt"),
		ClientKeyFile:  filepath.Join(dir, "client.key"),
	}
	if err := os.WriteFile(c.ClientKeyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.ClientCertFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	return c, nil
}

// ClientFlags are the flags with which the control plane and its etcd
// commands reach the cluster, beside --etcd-servers.
func (c *Credentials) ClientFlags() []string {
	return []string{"--etcd-cafile=" + c.CAFile, "--etcd-certfile=" + c.ClientCertFile, "--etcd-keyfile=" + c.ClientKeyFile}
}

// MemberFlags are the flags of an etcd process for client and peer TLS
// with client certificates required, beside its https URLs.
func (c *Credentials) MemberFlags() []string {
	return []string{
		"--client-cert-auth", "--trusted-ca-file=" + c.CAFile,
		"--cert-file=" + c.MemberCertFile, "--key-file=" + c.MemberKeyFile,
		"--peer-client-cert-auth", "--peer-trusted-ca-file=" + c.CAFile,
		"--peer-cert-file=" + c.MemberCertFile, "--peer-key-file=" + c.MemberKeyFile,
	}
}

// ConfigureMember sets what MemberFlags sets on cfg, for a member run
// in-process; its URLs are the caller's to set, with https.
func (c *Credentials) ConfigureMember(cfg *embed.Config) {
	info := transport.TLSInfo{
		CertFile:       c.MemberCertFile,
		KeyFile:        c.MemberKeyFile,
		TrustedCAFile:  c.CAFile,
		ClientCertAuth: true,
	}
	cfg.ClientTLSInfo, cfg.PeerTLSInfo = info, info
}

// StartMember starts a cluster of one member in-process on 127.0.0.1, with
// c's TLS, and returns its client URL once it serves. It is closed when
// the test ends. Options change its configuration before it starts, e.g.
// its TLS versions.
func StartMember(t testing.TB, c *Credentials, options ...func(*embed.Config)) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "m0"
	cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	// Its errors come from StartEtcd and Err; a member closed at the end
	// of a test would log some more.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	client, peer := url.URL{Scheme: "https", Host: freeAddress(t)}, url.URL{Scheme: "https", Host: freeAddress(t)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	c.ConfigureMember(cfg)
	for _, option := range options {
		option(cfg)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd with TLS: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd with TLS: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("etcd with TLS not ready within a minute")
	}
	return client.String()
}

// freeAddress is a free port on 127.0.0.1. (embed.Config takes no port 0:
// the member must advertise the port it listens on.)
func freeAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}
