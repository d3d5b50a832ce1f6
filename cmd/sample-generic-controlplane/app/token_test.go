package app

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

func TestTokenBadArguments(t *testing.T) {
	// Every case fails before it connects: the kubeconfig does not exist.
	const kubeconfig = "--kubeconfig=/nonexistent/admin.kubeconfig"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"zero --ttl", []string{"token", "create", "--ttl=0", kubeconfig}, "--ttl must be positive, e.g. --ttl=1h"},
		{"negative --ttl", []string{"token", "create", "--ttl=-1h", kubeconfig}, "--ttl must be positive, e.g. --ttl=1h"},
		{"unknown usage", []string{"token", "create", "--usages=join,admin", kubeconfig}, `--usages: unknown usage "admin"; write --usages=join`},
		{"no usage", []string{"token", "create", "--usages=", kubeconfig}, "--usages names no usage; write --usages=join"},
		{"create with an argument", []string{"token", "create", "node-2", kubeconfig}, `unknown command "node-2"`},
		{"list with an argument", []string{"token", "list", "all", kubeconfig}, `unknown command "all"`},
		{"delete without an ID", []string{"token", "delete", kubeconfig}, "token delete takes the IDs of the tokens to delete, e.g. token delete k3x9q2; token list shows them"},
		{"unknown subcommand", []string{"token", "generate"}, `unknown command "generate"`},
		{"kubeconfig missing", []string{"token", "list", kubeconfig}, "--kubeconfig /nonexistent/admin.kubeconfig: stat /nonexistent/admin.kubeconfig: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%q: %v, want an error containing %q; output:\n%s", tc.args, err, tc.wantErr, out)
			}
		})
	}
}

// testCA is a CA certificate in PEM, and its hash.
func testCA(t *testing.T) (pemData []byte, hash string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "token-test-ca"}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), jointoken.CAHash(ca)
}

// writeKubeconfig writes a kubeconfig of one cluster, as cluster sets it.
func writeKubeconfig(t *testing.T, cluster *clientcmdapi.Cluster) string {
	t.Helper()
	cluster.Server = "https://127.0.0.1:6443"
	config := clientcmdapi.NewConfig()
	config.Clusters["cp"] = cluster
	config.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	config.Contexts["cp"] = &clientcmdapi.Context{Cluster: "cp", AuthInfo: "admin"}
	config.CurrentContext = "cp"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runToken runs the token command on client; now is the time list takes.
func runToken(t *testing.T, client kubernetes.Interface, now time.Time, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newTokenCommandWith(func(*rest.Config) (kubernetes.Interface, error) { return client, nil }, func() time.Time { return now })
	// As under the root command.
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// The token pins the CA that the kubeconfig trusts, and there must be one.
func TestTokenCreatePinsTheKubeconfigsCA(t *testing.T) {
	ca, hash := testCA(t)
	other, _ := testCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	const useAdmin = "use a kubeconfig that names the cluster's CA, e.g. admin.kubeconfig in the data dir of a server of the cluster"
	for _, tc := range []struct {
		name    string
		cluster *clientcmdapi.Cluster
		// wantErr is the error's beginning, "" for none.
		wantErr string
	}{
		{name: "certificate-authority-data", cluster: &clientcmdapi.Cluster{CertificateAuthorityData: ca}},
		{name: "certificate-authority", cluster: &clientcmdapi.Cluster{CertificateAuthority: caFile}},
		{name: "no CA", cluster: &clientcmdapi.Cluster{},
			wantErr: "the kubeconfig names no CA for its cluster (certificate-authority-data or certificate-authority), and a token pins the cluster's CA; " + useAdmin},
		{name: "insecure", cluster: &clientcmdapi.Cluster{InsecureSkipTLSVerify: true},
			wantErr: "the kubeconfig skips checking the server's certificate (insecure-skip-tls-verify), so it does not say which CA a token should pin; " + useAdmin},
		{name: "a bundle", cluster: &clientcmdapi.Cluster{CertificateAuthorityData: append(append([]byte{}, ca...), other...)},
			wantErr: "the kubeconfig's CA bundle holds 2 certificates, and a token pins one CA; " + useAdmin},
		{name: "not a certificate", cluster: &clientcmdapi.Cluster{CertificateAuthorityData: []byte("not PEM")},
			wantErr: "the cluster's CA in the kubeconfig: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			stdout, stderr, err := runToken(t, client, time.Now(), "create", "--kubeconfig="+writeKubeconfig(t, tc.cluster))
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("create: %v, want %q", err, tc.wantErr)
				}
				if n := len(client.Actions()); n != 0 {
					t.Errorf("create made %d requests before refusing", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v; stderr %s", err, stderr)
			}
			token, err := jointoken.Parse(stdout)
			if err != nil {
				t.Fatalf("create printed %q: %v", stdout, err)
			}
			if token.CAHash != hash {
				t.Errorf("the token pins %s, want the kubeconfig's CA, %s", token.CAHash, hash)
			}
		})
	}
}

func TestTokenCreateListDelete(t *testing.T) {
	ca, _ := testCA(t)
	kubeconfig := writeKubeconfig(t, &clientcmdapi.Cluster{CertificateAuthorityData: ca})
	// As kubectl, the commands find the kubeconfig in $KUBECONFIG too.
	t.Setenv("KUBECONFIG", kubeconfig)
	client := fake.NewClientset()
	later := time.Now().Add(time.Hour)

	// create prints the token alone, one line: scripts take stdout.
	stdout, stderr, err := runToken(t, client, later, "create", "--ttl=1m", "--single-use", "--description=node-2")
	if err != nil || stderr != "" || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("create: %v; stdout %q, stderr %q", err, stdout, stderr)
	}
	short, err := jointoken.Parse(stdout)
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, err = runToken(t, client, later, "create", "--kubeconfig="+kubeconfig, "--ttl=2h")
	if err != nil {
		t.Fatal(err)
	}
	long, err := jointoken.Parse(stdout)
	if err != nil {
		t.Fatal(err)
	}

	// An hour later, the first has expired.
	stdout, _, err = runToken(t, client, later, "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	rfc3339 := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	want := map[string]*regexp.Regexp{
		short.ID: regexp.MustCompile(`^` + short.ID + ` +` + rfc3339 + ` \(expired\) +join +true +node-2$`),
		long.ID:  regexp.MustCompile(`^` + long.ID + ` +` + rfc3339 + ` +join +false *$`),
	}
	if len(lines) != 3 || !regexp.MustCompile(`^ID +EXPIRES +USAGES +SINGLE-USE +DESCRIPTION$`).MatchString(lines[0]) {
		t.Fatalf("list:\n%s", stdout)
	}
	for _, line := range lines[1:] {
		id, _, _ := strings.Cut(line, " ")
		if re := want[id]; re == nil || !re.MatchString(line) {
			t.Errorf("list line %q, want it to match %v", line, re)
		}
	}
	if strings.Contains(stdout, short.Secret) || strings.Contains(stdout, long.Secret) {
		t.Error("list shows a secret")
	}

	// delete goes on past an ID it does not find, and says which.
	stdout, _, err = runToken(t, client, later, "delete", short.ID, "nosuch", long.ID)
	if want := fmt.Sprintf("join token %s deleted\njoin token %s deleted\n", short.ID, long.ID); stdout != want {
		t.Errorf("delete printed %q, want %q", stdout, want)
	}
	if err == nil || err.Error() != "join token nosuch not found; list them with `sample-generic-controlplane token list`" {
		t.Errorf("delete: %v", err)
	}

	stdout, stderr, err = runToken(t, client, later, "list")
	if err != nil || stdout != "" || stderr != "No join tokens found\n" {
		t.Errorf("list after delete: %v; stdout %q, stderr %q", err, stdout, stderr)
	}
}

func TestTokenHelp(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil || !strings.Contains(out, "\n  token ") {
		t.Errorf("the root's help does not list token: %v\n%s", err, out)
	}
	out, err = execute(t, "token", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--join https://HOST:PORT --token TOKEN", "\n  create ", "\n  list ", "\n  delete "} {
		if !strings.Contains(out, want) {
			t.Errorf("token --help does not mention %q:\n%s", want, out)
		}
	}
	out, err = execute(t, "token", "create", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--ttl", "--usages", "--single-use", "--description", "--kubeconfig"} {
		if !strings.Contains(out, want) {
			t.Errorf("token create --help does not mention %s:\n%s", want, out)
		}
	}
}
