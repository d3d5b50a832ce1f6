package externaltls_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/externaltls"
	"sigs.k8s.io/sample-generic-controlplane/internal/externaltlstest"
)

// credentials makes the credentials of a new etcd cluster under a new temp dir.
func credentials(t *testing.T) *externaltlstest.Credentials {
	t.Helper()
	c, err := externaltlstest.NewCredentials(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closedEndpoint is an https URL on loopback where nothing listens.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() //nolint:errcheck
	return "https://" + addr
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Check against a member that requires client certificates: it tells
// configurations that can never work, naming the flag to fix, from those
// that work and from members it cannot reach, which it leaves to the etcd
// client. It answers within a second on loopback either way.
func TestCheck(t *testing.T) {
	creds := credentials(t)
	foreign := credentials(t)
	member := externaltlstest.StartMember(t, creds)
	// A member of TLS 1.2 refuses a client certificate in the handshake,
	// and a missing one with an alert that does not say so.
	member12 := externaltlstest.StartMember(t, creds, func(cfg *embed.Config) { cfg.TlsMaxVersion = "TLS1.2" })
	localhost := strings.Replace(member, "127.0.0.1", "localhost", 1)
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	unreachable := closedEndpoint(t)
	right := externaltls.Files{CAFile: creds.CAFile, CertFile: creds.ClientCertFile, KeyFile: creds.ClientKeyFile}
	with := func(change func(*externaltls.Files)) externaltls.Files {
		f := right
		change(&f)
		return f
	}

	for _, tc := range []struct {
		name      string
		endpoints []string
		files     externaltls.Files
		// wantFlag is the flag the *Error names; "" for no error.
		wantFlag string
		// wantEndpoint is the member the *Error names; "" for a file.
		wantEndpoint string
		// want are further parts of the message.
		want []string
	}{
		{name: "right files", endpoints: []string{member}, files: right},
		{name: "only unreachable members", endpoints: []string{unreachable}, files: right},
		{name: "no https endpoint", endpoints: []string{"http://127.0.0.1:1", "unix:///nonexistent"}, files: right},
		{
			name:      "the first reachable member decides",
			endpoints: []string{unreachable, member},
			files:     with(func(f *externaltls.Files) { f.CAFile = foreign.CAFile }),
			wantFlag:  "--etcd-cafile", wantEndpoint: member,
			want: []string{"--etcd-cafile=" + foreign.CAFile + " does not trust the certificate of the etcd member at " + member, "x509: certificate signed by unknown authority"},
		},
		{
			name:      "a CA that did not sign the member's certificate",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CAFile = foreign.CAFile }),
			wantFlag:  "--etcd-cafile", wantEndpoint: member,
			want: []string{"does not trust", "set it to the CA that signed the members' serving certificates (etcd's --cert-file)"},
		},
		{
			name:      "no CA: the system's do not sign the member's certificate",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CAFile = "" }),
			wantFlag:  "--etcd-cafile", wantEndpoint: member,
			want: []string{"--etcd-cafile is not set", "set --etcd-cafile to the CA"},
		},
		{
			name:      "no client certificate",
			endpoints: []string{member},
			files:     externaltls.Files{CAFile: creds.CAFile},
			wantFlag:  "--etcd-certfile", wantEndpoint: member,
			want: []string{"the etcd member at " + member + " requires a client certificate", "set --etcd-certfile and --etcd-keyfile"},
		},
		{
			name:      "no client certificate, TLS 1.2",
			endpoints: []string{member12},
			files:     externaltls.Files{CAFile: creds.CAFile},
			wantFlag:  "--etcd-certfile", wantEndpoint: member12,
			want: []string{"the etcd member at " + member12 + " requires a client certificate (remote error: tls: handshake failure)"},
		},
		{
			name:      "a client certificate of another CA, TLS 1.2",
			endpoints: []string{member12},
			files:     with(func(f *externaltls.Files) { f.CertFile, f.KeyFile = foreign.ClientCertFile, foreign.ClientKeyFile }),
			wantFlag:  "--etcd-certfile", wantEndpoint: member12,
			want: []string{"refuses this client certificate (remote error: tls: unknown certificate authority)"},
		},
		{name: "right files, TLS 1.2", endpoints: []string{member12}, files: right},
		{
			name:      "a client certificate of another CA",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CertFile, f.KeyFile = foreign.ClientCertFile, foreign.ClientKeyFile }),
			wantFlag:  "--etcd-certfile", wantEndpoint: member,
			want: []string{"--etcd-certfile=" + foreign.ClientCertFile + ": the etcd member at " + member + " refuses this client certificate", "remote error: tls:"},
		},
		{
			name:      "a name the member's certificate is not for",
			endpoints: []string{localhost},
			files:     right,
			wantFlag:  "--etcd-servers", wantEndpoint: localhost,
			want: []string{"is not valid for localhost", "wanted to match localhost"},
		},
		{
			name:      "https to a server without TLS",
			endpoints: []string{strings.Replace(plain.URL, "http://", "https://", 1)},
			files:     right,
			wantFlag:  "--etcd-servers", wantEndpoint: strings.Replace(plain.URL, "http://", "https://", 1),
			want: []string{"does not answer with TLS", "write http://"},
		},
		{
			name:      "a certificate file that does not exist",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CertFile = filepath.Join(t.TempDir(), "missing.crt") }),
			wantFlag:  "--etcd-certfile",
			want:      []string{"missing.crt", "no such file or directory"},
		},
		{
			name:      "a key that is not the certificate's",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.KeyFile = foreign.ClientKeyFile }),
			wantFlag:  "--etcd-keyfile",
			want:      []string{"--etcd-keyfile=" + foreign.ClientKeyFile + " is not the key of the client certificate --etcd-certfile=" + creds.ClientCertFile, "private key does not match public key"},
		},
		{
			name:      "a certificate without its key",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.KeyFile = "" }),
			wantFlag:  "--etcd-keyfile",
			want:      []string{"--etcd-keyfile is not set", "set both, or neither"},
		},
		{
			name:      "a key without its certificate",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CertFile = "" }),
			wantFlag:  "--etcd-certfile",
			want:      []string{"--etcd-certfile is not set"},
		},
		{
			name:      "a CA file without a certificate",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.CAFile = writeFile(t, "not PEM") }),
			wantFlag:  "--etcd-cafile",
			want:      []string{"it must hold the PEM certificate of the CA"},
		},
		{
			name:      "a key file without a key",
			endpoints: []string{member},
			files:     with(func(f *externaltls.Files) { f.KeyFile = writeFile(t, "not PEM") }),
			wantFlag:  "--etcd-keyfile",
			want:      []string{"it must hold the PEM private key"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := externaltls.Check(t.Context(), tc.endpoints, tc.files)
			if took := time.Since(start); took > time.Second {
				t.Errorf("Check took %s on loopback, want less than a second", took)
			}
			if tc.wantFlag == "" {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			var e *externaltls.Error
			if !errors.As(err, &e) {
				t.Fatalf("Check: %v (%T), want an *externaltls.Error naming %s", err, err, tc.wantFlag)
			}
			if e.Flag != tc.wantFlag || e.Endpoint != tc.wantEndpoint {
				t.Errorf("Check named flag %q and endpoint %q, want %q and %q: %v", e.Flag, e.Endpoint, tc.wantFlag, tc.wantEndpoint, err)
			}
			if !strings.Contains(err.Error(), tc.wantFlag) {
				t.Errorf("the message does not name %s: %v", tc.wantFlag, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message does not say %q: %v", want, err)
				}
			}
		})
	}
}
