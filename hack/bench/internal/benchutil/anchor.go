package benchutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AnchorBinaries are the separate-process stack the benchmarks compare
// against, built from this module's graph: etcd, upstream's generic sample
// apiserver and, when KCM is set, kube-controller-manager running the
// controllers that sample-generic-controlplane runs in-process.
type AnchorBinaries struct {
	Etcd, APIServer, KCM string
}

// anchorControllers are the generic controllers
// (controllers/manager.GenericControllers), by their names, which are
// kube-controller-manager's.
var anchorControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"clusterrole-aggregation-controller",
	"resourcequota-controller",
	"certificatesigningrequest-signing-controller",
	"certificatesigningrequest-cleaner-controller",
	"serviceaccount-token-controller",
	"validatingadmissionpolicy-status-controller",
	"root-ca-certificate-publisher-controller",
	"storage-version-migrator-controller",
}

// Anchor is one anchor stack on a data directory. Start it, stop it and
// start it again on the same directory to measure a restart.
type Anchor struct {
	bins                 AnchorBinaries
	dir                  string
	etcdPort, peerPort   int
	Port                 int // the apiserver's secure port
	Etcd, APIServer, KCM *Process
}

// NewAnchor prepares dir (the CA, the admin client certificate, the
// service account key) and picks the ports.
func NewAnchor(bins AnchorBinaries, dir string) (*Anchor, error) {
	a := &Anchor{bins: bins, dir: dir}
	for _, p := range []*int{&a.etcdPort, &a.peerPort, &a.Port} {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		*p = port
	}
	if err := writeECKey(a.path("sa.key")); err != nil {
		return nil, err
	}
	// The cluster CA: it signs the admin's client certificate and, in
	// kube-controller-manager, certificate requests, as ours does.
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "bench-anchor-ca"}, caKey)
	if err != nil {
		return nil, err
	}
	if err := cert.WriteCert(a.path("ca.crt"), pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: ca.Raw})); err != nil {
		return nil, err
	}
	caKeyDER, err := x509.MarshalECPrivateKey(caKey)
	if err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(a.path("ca.key"), pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: caKeyDER})); err != nil {
		return nil, err
	}
	// The harness and kube-controller-manager authenticate as ours do with
	// admin.kubeconfig: an ECDSA P-256 client certificate in system:masters,
	// verified on every request against --client-ca-file.
	adminKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "bench-admin", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	adminDER, err := x509.CreateCertificate(rand.Reader, template, ca, adminKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	if err := cert.WriteCert(a.path("admin.crt"), pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: adminDER})); err != nil {
		return nil, err
	}
	adminKeyDER, err := x509.MarshalECPrivateKey(adminKey)
	if err != nil {
		return nil, err
	}
	if err := keyutil.WriteKey(a.path("admin.key"), pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: adminKeyDER})); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *Anchor) path(name string) string { return filepath.Join(a.dir, name) }

// EtcdURL is etcd's client URL.
func (a *Anchor) EtcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", a.etcdPort) }

// Start starts etcd, then the apiserver against it, waits for the
// apiserver's readiness and, with a KCM binary, starts kube-controller-manager
// (it does not wait for it: see WaitControllers). tag names the log files.
func (a *Anchor) Start(tag string) error {
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", a.peerPort)
	etcdArgs := EtcdArgs(a.path("etcd"), a.EtcdURL(), peerURL)
	apiArgs := []string{
		"--etcd-servers=" + a.EtcdURL(), "--secure-port=" + strconv.Itoa(a.Port), "--bind-address=127.0.0.1",
		"--cert-dir=" + a.path("certs"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + a.path("sa.key"),
		"--service-account-signing-key-file=" + a.path("sa.key"),
		"--client-ca-file=" + a.path("ca.crt"),
		// Same authorization as ours; it also lets the anonymous probe read /readyz.
		"--authorization-mode=RBAC",
	}
	var err error
	if a.Etcd, err = Start(a.bins.Etcd, etcdArgs, a.path("etcd-"+tag+".log")); err != nil {
		return err
	}
	if a.APIServer, err = Start(a.bins.APIServer, apiArgs, a.path("apiserver-"+tag+".log")); err != nil {
		a.Stop() //nolint:errcheck
		return err
	}
	if err := WaitReady(a.Port, a.APIServer, time.Minute); err != nil {
		a.Stop() //nolint:errcheck
		return fmt.Errorf("anchor: %w", err)
	}
	if a.bins.KCM == "" {
		return nil
	}
	if err := a.writeKubeconfig(); err != nil {
		a.Stop() //nolint:errcheck
		return err
	}
	kcmArgs := []string{
		"--kubeconfig=" + a.path("kcm.kubeconfig"),
		"--controllers=" + strings.Join(anchorControllers, ","),
		"--use-service-account-credentials=true", "--secure-port=0",
		"--service-account-private-key-file=" + a.path("sa.key"),
		"--root-ca-file=" + a.path("certs/apiserver.crt"),
		"--cluster-signing-cert-file=" + a.path("ca.crt"), "--cluster-signing-key-file=" + a.path("ca.key"),
	}
	if a.KCM, err = Start(a.bins.KCM, kcmArgs, a.path("kcm-"+tag+".log")); err != nil {
		a.Stop() //nolint:errcheck
		return err
	}
	return nil
}

// EtcdArgs are the flags of a one-member etcd on dataDir, serving plain
// HTTP on loopback, as the anchor runs it.
func EtcdArgs(dataDir, clientURL, peerURL string) []string {
	return []string{
		"--data-dir=" + dataDir, "--name=default",
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--log-level=warn",
	}
}

// Config is an admin client configuration for the anchor apiserver. Its
// serving certificate is self-signed and written on the first start, so
// it serves as the CA.
func (a *Anchor) Config() *rest.Config {
	return &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", a.Port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile: a.path("certs/apiserver.crt"), CertFile: a.path("admin.crt"), KeyFile: a.path("admin.key"),
		},
	}
}

func (a *Anchor) writeKubeconfig() error {
	c := a.Config()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["anchor"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthority: c.CAFile}
	kubeconfig.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: c.CertFile, ClientKey: c.KeyFile}
	kubeconfig.Contexts["anchor"] = &clientcmdapi.Context{Cluster: "anchor", AuthInfo: "admin"}
	kubeconfig.CurrentContext = "anchor"
	return clientcmd.WriteToFile(*kubeconfig, a.path("kcm.kubeconfig"))
}

// Pids are the stack's running processes.
func (a *Anchor) Pids() []int {
	var pids []int
	for _, p := range []*Process{a.Etcd, a.APIServer, a.KCM} {
		if p != nil {
			pids = append(pids, p.Cmd.Process.Pid)
		}
	}
	return pids
}

// Stop stops kube-controller-manager, the apiserver, then etcd.
func (a *Anchor) Stop() error {
	var first error
	for _, p := range []**Process{&a.KCM, &a.APIServer, &a.Etcd} {
		if *p == nil {
			continue
		}
		if err := (*p).Stop(); err != nil && first == nil {
			first = err
		}
		*p = nil
	}
	return first
}

func writeECKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return keyutil.WriteKey(path, pem.EncodeToMemory(&pem.Block{Type: keyutil.ECPrivateKeyBlockType, Bytes: der}))
}

// RSS is a process's resident memory, in MiB: file-backed pages (the
// binary's code and read-only data, shared libraries, mapped files) and
// anonymous ones (the Go heap, stacks and runtime metadata).
type RSS struct{ File, Anon float64 }

// Total is all resident memory.
func (r RSS) Total() float64 { return r.File + r.Anon }

// ReadRSS reads the resident memory of pids, summed, from /proc/PID/status.
func ReadRSS(pids []int) RSS {
	var r RSS
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			for prefix, into := range map[string]*float64{"RssFile:": &r.File, "RssAnon:": &r.Anon, "RssShmem:": &r.File} {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
					*into += kb / 1024
				}
			}
		}
	}
	return r
}

// CPUSeconds is the user and system CPU time pids have used, from
// /proc/PID/stat (utime and stime, in clock ticks of 1/100 s).
func CPUSeconds(pids []int) float64 {
	var ticks float64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name in field 2 may contain spaces; fields count
		// from the closing parenthesis.
		_, rest, ok := strings.Cut(string(data), ") ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		ticks += utime + stime
	}
	return ticks / 100
}
