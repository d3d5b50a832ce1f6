package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// The specs of aggregation run k8s.io/sample-apiserver, the wardle server
// upstream's own e2e suite aggregates, as a user would deploy an aggregated
// API server: with an etcd of its own, a serving certificate from a CA of
// its own, and authentication and authorization delegated to the control
// plane under an identity that holds only the roles upstream documents.

const (
	// sampleAPIServerEnv names a sample-apiserver binary to run instead
	// of building one (the Makefile builds it into bin/).
	sampleAPIServerEnv     = "SGCP_SAMPLE_APISERVER"
	sampleAPIServerPackage = "k8s.io/sample-apiserver"

	// The service the APIService names. Nothing runs it: the control plane
	// learns where it is served from a ServiceLocation, and the
	// aggregator verifies the server's certificate for its DNS name.
	wardleServiceNamespace = "wardle"
	wardleServiceName      = "api"
	wardleServicePort      = 443
	wardleServiceHost      = wardleServiceName + "." + wardleServiceNamespace + ".svc"
)

// sampleAPIServerBinary builds sample-apiserver on first use, so that runs
// without the aggregation specs do not pay for it, or takes
// $SGCP_SAMPLE_APISERVER. It is stamped with the Kubernetes version like
// kubectl: unstamped, its /version says v0.0.0-master+$Format:%H$, which
// parses as no version.
var sampleAPIServerBinary = sync.OnceValues(func() (string, error) {
	if path := os.Getenv(sampleAPIServerEnv); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("$%s: %w", sampleAPIServerEnv, err)
		}
		return path, nil
	}
	ldflags, err := kubeVersionLDFlags()
	if err != nil {
		return "", err
	}
	out := filepath.Join(exampleBinDir, "sample-apiserver")
	if output, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, sampleAPIServerPackage).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", sampleAPIServerPackage, err, output)
	}
	return out, nil
})

// sampleAPIServerReadyTimeout bounds the wait for sample-apiserver's
// /readyz, which needs its informers on the control plane synced.
const sampleAPIServerReadyTimeout = 60 * time.Second

// sampleAPIServer is a running sample-apiserver.
type sampleAPIServer struct {
	// URL is where it serves, https://127.0.0.1:<Port>.
	URL  string
	Port int
	// CABundle is the PEM of the CA that signed its serving certificate,
	// which is valid for wardleServiceHost and 127.0.0.1: what an
	// APIService's caBundle holds.
	CABundle []byte
	// Namespace holds its service account, ServiceAccount.
	Namespace, ServiceAccount string
	// StdoutPath and StderrPath hold its output.
	StdoutPath, StderrPath string
}

// User is the name the control plane knows it by.
func (s *sampleAPIServer) User() string {
	return "system:serviceaccount:" + s.Namespace + ":" + s.ServiceAccount
}

// Config is a client configuration of the server itself, not through the
// control plane, verifying it with CABundle and authenticating with the
// credentials of creds (nil: none, anonymous).
func (s *sampleAPIServer) Config(creds *rest.Config) *rest.Config {
	cfg := &rest.Config{}
	if creds != nil {
		cfg = rest.CopyConfig(creds)
	}
	cfg.Host = s.URL
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.ServerName = s.CABundle, "", ""
	return cfg
}

// startSampleAPIServer starts sample-apiserver for c on a free loopback
// port and returns once its /readyz answers and it trusts the control
// plane's client and front-proxy CAs. It is stopped, and everything created
// for it deleted, when the test ends. The control plane must reach the
// test's loopback (ActionReachTestHost) to connect to it.
func startSampleAPIServer(t *testing.T, c *Cluster) *sampleAPIServer {
	t.Helper()
	binary, err := sampleAPIServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	etcdURL := startFixtureEtcd(t, filepath.Join(dir, "etcd"))
	ca, certFile, keyFile := writeServingCertificate(t, dir, wardleServiceHost)

	cs := clientset(t, c)
	s := &sampleAPIServer{
		CABundle:       ca,
		Namespace:      specNamespace(t, cs, "e2e-spec-wardle"),
		ServiceAccount: "apiserver",
	}
	grantDelegation(t, cs, s.Namespace, s.ServiceAccount)
	kubeconfig := writeServiceAccountKubeconfig(t, c, cs, s.Namespace, s.ServiceAccount, filepath.Join(dir, "wardle.kubeconfig"))

	if s.Port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	s.URL = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	s.StdoutPath, s.StderrPath = filepath.Join(dir, "stdout.log"), filepath.Join(dir, "stderr.log")
	proc := startProcess(t, binary, dir, s.StdoutPath, s.StderrPath,
		"--etcd-servers="+etcdURL,
		"--tls-cert-file="+certFile,
		"--tls-private-key-file="+keyFile,
		"--secure-port="+strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		// One identity for all three: it reviews tokens and access
		// (system:auth-delegator), reads the control plane's client and
		// front-proxy CAs (extension-apiserver-authentication-reader) and
		// watches what its admission and flow control need.
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--kubeconfig="+kubeconfig,
	)
	waitSampleAPIServerReady(t, s, proc)
	waitTrustsControlPlaneCAs(t, s, cs)
	return s
}

// startFixtureEtcd starts an etcd member in the test process for the
// aggregated server, which keeps its objects apart from the control
// plane's, and returns its client URL. The member listens on a unix socket
// only; unix:///path is the form both etcd's client and the API server's
// --etcd-servers accept.
func startFixtureEtcd(t *testing.T, dataDir string) string {
	t.Helper()
	// Not under t.TempDir(): its path may exceed the 107 bytes of a unix
	// socket's.
	socketDir, err := os.MkdirTemp("", "wardle-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) }) //nolint:errcheck // best effort
	etcd, err := embeddedetcd.Start(t.Context(), embeddedetcd.Config{DataDir: dataDir, SocketPath: filepath.Join(socketDir, "run", "etcd.sock")})
	if err != nil {
		t.Fatalf("starting the aggregated server's etcd: %v", err)
	}
	t.Cleanup(etcd.Close)
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatalf("waiting for the aggregated server's etcd: %v", err)
	}
	return etcd.ClientURL()
}

// writeServingCertificate writes a key and a serving certificate for host
// and 127.0.0.1, signed by a new CA, under dir, and returns the CA's PEM and
// the two files' paths.
func writeServingCertificate(t *testing.T, dir, host string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "e2e-wardle-ca"}, caKey)
	if err != nil {
		t.Fatalf("creating the aggregated server's CA: %v", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		// Valid from an hour back, as client-go's self-signed
		// certificates are, against clocks a little behind ours.
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, key.Public(), caKey)
	if err != nil {
		t.Fatalf("signing the aggregated server's certificate: %v", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := certutil.EncodeCertificates(&x509.Certificate{Raw: der})
	if err != nil {
		t.Fatal(err)
	}
	if caPEM, err = certutil.EncodeCertificates(ca); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return caPEM, certFile, keyFile
}

// grantDelegation creates service account namespace/name and gives it what
// an aggregated API server needs of the control plane, under names of its
// own that go when the test ends.
//
// Upstream documents (sample-apiserver's artifacts/example, and the
// aggregation guide) system:auth-delegator to create TokenReviews and
// SubjectAccessReviews, extension-apiserver-authentication-reader to read
// kube-system/extension-apiserver-authentication, and a role to watch
// namespaces (the NamespaceLifecycle admission plugin), admission
// webhooks and policies (the admission plugins that apply them to the
// server's own objects) and flow control (priority and fairness).
//
// That role, as documented, lacks MutatingAdmissionPolicies and their
// bindings: sample-apiserver runs the MutatingAdmissionPolicy admission
// plugin, whose informers then fail to list forever and hold /readyz at
// "informer-sync failed". Upstream's own e2e test grants every resource of
// admissionregistration.k8s.io, which hides this; we add the two by name.
func grantDelegation(t *testing.T, cs kubernetes.Interface, namespace, name string) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating service account %s/%s: %v", namespace, name, err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}
	// Cluster-scoped and kube-system names: unique to this namespace.
	prefix := namespace + ":" + name

	reader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + ":reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{
				"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
				"validatingadmissionpolicies", "validatingadmissionpolicybindings",
				"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
			}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"prioritylevelconfigurations", "flowschemas"}, Verbs: []string{"list", "watch"}},
		},
	}
	clusterRoles := cs.RbacV1().ClusterRoles()
	if _, err := clusterRoles.Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating cluster role %s: %v", reader.Name, err)
	}
	deleteOnCleanup(t, "cluster role "+reader.Name, func(ctx context.Context) error {
		return clusterRoles.Delete(ctx, reader.Name, metav1.DeleteOptions{})
	})

	clusterRoleBindings := cs.RbacV1().ClusterRoleBindings()
	for _, role := range []string{"system:auth-delegator", reader.Name} {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + ":" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   subjects,
		}
		if _, err := clusterRoleBindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding cluster role %s: %v", role, err)
		}
		deleteOnCleanup(t, "cluster role binding "+binding.Name, func(ctx context.Context) error {
			return clusterRoleBindings.Delete(ctx, binding.Name, metav1.DeleteOptions{})
		})
	}

	roleBindings := cs.RbacV1().RoleBindings(metav1.NamespaceSystem)
	authReader := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + ":extension-apiserver-authentication-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   subjects,
	}
	if _, err := roleBindings.Create(ctx, authReader, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding role extension-apiserver-authentication-reader in %s: %v", metav1.NamespaceSystem, err)
	}
	deleteOnCleanup(t, "role binding "+metav1.NamespaceSystem+"/"+authReader.Name, func(ctx context.Context) error {
		return roleBindings.Delete(ctx, authReader.Name, metav1.DeleteOptions{})
	})
}

// deleteOnCleanup calls del when the test ends, and reports its error
// unless the object is gone already.
func deleteOnCleanup(t *testing.T, what string, del func(context.Context) error) {
	t.Cleanup(func() {
		// Not t.Context(): it is done by now.
		if err := del(context.Background()); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", what, err)
		}
	})
}

// serviceAccountToken is a token of service account namespace/name from
// the TokenRequest API, as "kubectl create token" gets one.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, namespace, name string) string {
	t.Helper()
	// An hour outlives any spec; the aggregated server does not renew it.
	expiration := int64(time.Hour / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for service account %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// controlPlaneCA is the PEM the clients of c verify it with.
func controlPlaneCA(t *testing.T, c *Cluster) []byte {
	t.Helper()
	cfg := restConfig(t, c)
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatalf("kubeconfig %s: %v", c.Kubeconfig, err)
	}
	if len(cfg.CAData) == 0 {
		t.Fatalf("kubeconfig %s names no certificate authority", c.Kubeconfig)
	}
	return cfg.CAData
}

// writeServiceAccountKubeconfig writes to path a kubeconfig of c that
// authenticates as service account namespace/name with a token, and
// returns path.
func writeServiceAccountKubeconfig(t *testing.T, c *Cluster, cs kubernetes.Interface, namespace, name, path string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["control-plane"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: controlPlaneCA(t, c)}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: serviceAccountToken(t, cs, namespace, name)}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "control-plane", AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

// fixtureProcess is a server a test runs beside the control plane.
type fixtureProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
}

// exited reports whether the process has ended.
func (p *fixtureProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProcess runs binary with args in dir, its output into the two
// files, and stops it (by its pid, SIGTERM, then SIGKILL after stopTimeout)
// when the test ends, printing the end of its output if the test failed.
func startProcess(t *testing.T, binary, dir, stdoutPath, stderrPath string, args ...string) *fixtureProcess {
	t.Helper()
	stdout, err := os.Create(stdoutPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(stderrPath)
	if err != nil {
		stdout.Close() //nolint:errcheck
		t.Fatal(err)
	}
	// Not CommandContext: the process outlives the start; cleanup ends it.
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		stdout.Close() //nolint:errcheck
		stderr.Close() //nolint:errcheck
		t.Fatalf("running %s: %v", binary, err)
	}
	p := &fixtureProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // how it ended is read from cmd.ProcessState
		stdout.Close() //nolint:errcheck
		stderr.Close() //nolint:errcheck
		close(p.done)
	}()
	name := filepath.Base(binary)
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGTERM) // fails only when it has just exited
			timer := time.NewTimer(stopTimeout)
			defer timer.Stop()
			select {
			case <-p.done:
			case <-timer.C:
				t.Logf("%s (pid %d) still running %s after SIGTERM; killing it", name, cmd.Process.Pid, stopTimeout)
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			for _, path := range []string{stdoutPath, stderrPath} {
				t.Logf("last lines of %s's output %s:\n%s", name, path, fileTail(path))
			}
		}
	})
	return p
}

// fileTail is the end of the file at path, or why it cannot be read.
func fileTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return tail(string(data), logTailLines)
}

// waitSampleAPIServerReady waits until s answers /readyz with 200,
// verifying it with its CA. It is ready once its informers on the control
// plane have synced, which needs the roles grantDelegation grants; it
// exits at start when it cannot read
// kube-system/extension-apiserver-authentication.
func waitSampleAPIServerReady(t *testing.T, s *sampleAPIServer, p *fixtureProcess) {
	t.Helper()
	client, err := rest.HTTPClientFor(s.Config(nil))
	if err != nil {
		t.Fatal(err)
	}
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, sampleAPIServerReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("sample-apiserver exited with code %d; last lines of %s:\n%s", p.cmd.ProcessState.ExitCode(), s.StderrPath, fileTail(s.StderrPath))
		}
		code, body, err := httpGet(ctx, client, s.URL+"/readyz?verbose", nil)
		if err != nil {
			if ctx.Err() == nil { // the deadline cut this one short: keep the answer before
				last = err.Error()
			}
			return false, nil
		}
		last = fmt.Sprintf("%d: %s", code, body)
		return code == http.StatusOK, nil
	})
	if err != nil {
		msg := fmt.Sprintf("waiting for sample-apiserver's /readyz at %s: %v; last answer: %s", s.URL, err, last)
		if denied := forbiddenLines(t, s.StderrPath, s.User()); len(denied) > 0 {
			msg += fmt.Sprintf("\nthe control plane refused it, as %s, what it needs; last refusals:\n%s", s.User(), tail(strings.Join(denied, "\n"), 4))
		}
		t.Fatal(msg)
	}
}

// authenticationConfigMap is where the control plane publishes, for
// aggregated API servers, the CAs of its clients and of its front proxy
// (upstream's cluster-authentication-info controller).
const authenticationConfigMap = "extension-apiserver-authentication"

// waitTrustsControlPlaneCAs waits until s asks TLS clients for certificates
// of the control plane's client CA and front-proxy CA, which it reads from
// kube-system/extension-apiserver-authentication.
//
// Its /readyz does not wait for them: it reads that ConfigMap through
// informers that start only once it serves, and until they have synced it
// authenticates client certificates, the front proxy's included, as
// nobody (system:anonymous). The CAs it names in the handshake come from
// the same content its authenticators verify with, updated after them.
func waitTrustsControlPlaneCAs(t *testing.T, s *sampleAPIServer, cs kubernetes.Interface) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(t.Context(), authenticationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the CAs the control plane publishes for aggregated API servers: %v", err)
	}
	var want []*x509.Certificate
	for _, key := range []string{"client-ca-file", "requestheader-client-ca-file"} {
		certs, err := certutil.ParseCertsPEM([]byte(cm.Data[key]))
		if err != nil {
			t.Fatalf("%s/%s: %s: %v", metav1.NamespaceSystem, authenticationConfigMap, key, err)
		}
		want = append(want, certs...)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CABundle) {
		t.Fatal("the aggregated server's CA bundle holds no certificate")
	}
	var missing []string
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, sampleAPIServerReadyTimeout, true, func(ctx context.Context) (bool, error) {
		var acceptable [][]byte
		dialer := &tls.Dialer{Config: &tls.Config{
			RootCAs: roots,
			GetClientCertificate: func(req *tls.CertificateRequestInfo) (*tls.Certificate, error) {
				acceptable = req.AcceptableCAs
				return &tls.Certificate{}, nil // none: only the request matters
			},
		}}
		conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
		if err != nil {
			return false, fmt.Errorf("TLS handshake with the aggregated server: %w", err)
		}
		conn.Close() //nolint:errcheck // only the handshake mattered
		missing = nil
		for _, ca := range want {
			if !slices.ContainsFunc(acceptable, func(subject []byte) bool { return bytes.Equal(subject, ca.RawSubject) }) {
				missing = append(missing, ca.Subject.String())
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("waiting until sample-apiserver trusts the CAs of %s/%s: %v; not yet: %q", metav1.NamespaceSystem, authenticationConfigMap, err, missing)
	}
}

// httpGet sends a GET of url with header through client and returns the
// status code and body.
func httpGet(ctx context.Context, client *http.Client, url string, header http.Header) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close() //nolint:errcheck
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("reading the answer to GET %s: %w", url, err)
	}
	return resp.StatusCode, string(body), nil
}

// forbiddenLines are the lines of the log at path that say user was
// forbidden something.
func forbiddenLines(t *testing.T, path, user string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The log quotes the message, so the user's quotes are escaped.
	needle := `forbidden: User \"` + user + `\"`
	var lines []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, needle) {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}
