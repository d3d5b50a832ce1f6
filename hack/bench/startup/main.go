// Command startup measures time to ready and idle memory of
// sample-generic-controlplane beside its anchor: the upstream generic sample
// apiserver (k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic)
// with a separately started etcd (go.etcd.io/etcd/server/v3), both built
// from this module's graph. Each figure is the median of -runs runs,
// measured in the same invocation so that machine noise hits both sides.
// It also times what a Go test suite waits for: controlplane/testing.Start
// in this process, on a fresh data dir, to ready (no anchor).
//
//	go run ./hack/bench/startup -binary bin/sample-generic-controlplane \
//	    -anchor-apiserver bin/anchor-apiserver -anchor-etcd bin/anchor-etcd
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	anchorAPIServer := flag.String("anchor-apiserver", "bin/anchor-apiserver", "upstream generic sample apiserver binary")
	anchorEtcd := flag.String("anchor-etcd", "bin/anchor-etcd", "etcd binary")
	runs := flag.Int("runs", 5, "runs per figure; medians are reported")
	idle := flag.Duration("idle", 15*time.Second, "how long a ready server idles before its RSS is read")
	flag.Parse()
	// The in-process server logs as the binary does; keep the table readable.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)

	var ours, anchor results
	for i := range *runs {
		fmt.Fprintf(os.Stderr, "run %d/%d\n", i+1, *runs)
		if err := measureOurs(*binary, *idle, &ours); err != nil {
			benchutil.Fail(err)
		}
		if err := measureAnchor(*anchorAPIServer, *anchorEtcd, *idle, &anchor); err != nil {
			benchutil.Fail(err)
		}
		if err := measureInProcess(&ours); err != nil {
			benchutil.Fail(err)
		}
	}
	benchutil.Header(fmt.Sprintf("start-up and idle memory, median of %d runs (min-max)", *runs), "sample-generic-cp", "anchor (sample+etcd)")
	benchutil.Row("first start to ready (s)", ours.first, anchor.first, seconds)
	benchutil.Row("restart to ready (s)", ours.restart, anchor.restart, seconds)
	benchutil.Row("idle RSS (MB)", ours.rss, anchor.rss, megabytes)
	benchutil.Row("in-process test server to ready (s)", ours.inProcess, nil, seconds)
}

type results struct {
	first, restart, rss, inProcess []float64
}

func seconds(v float64) string   { return fmt.Sprintf("%.3f", v) }
func megabytes(v float64) string { return fmt.Sprintf("%.0f", v) }

// measureInProcess times controlplane/testing.Start on a fresh data dir, as
// a Go test suite calls it, up to ready with an admin client.
func measureInProcess(r *results) error {
	dir, err := os.MkdirTemp("", "bench-inprocess-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	start := time.Now()
	s, err := cptesting.Start(context.Background(), func() string { return dir }, cptesting.Options{Customize: kana.Install})
	if err != nil {
		return fmt.Errorf("in-process test server: %w", err)
	}
	r.inProcess = append(r.inProcess, time.Since(start).Seconds())
	return s.Stop()
}

// measureOurs starts the binary on a fresh data dir, stops it, starts it
// again on the same data dir and reads its RSS after idling.
func measureOurs(binary string, idle time.Duration, r *results) error {
	dir, err := os.MkdirTemp("", "bench-sgcp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	port, err := benchutil.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--data-dir=" + dir, "--secure-port=" + strconv.Itoa(port)}
	for i, into := range []*[]float64{&r.first, &r.restart} {
		start := time.Now()
		p, err := benchutil.Start(binary, args, filepath.Join(dir, fmt.Sprintf("log-%d", i)))
		if err != nil {
			return err
		}
		if err := benchutil.WaitReady(port, p, 60*time.Second); err != nil {
			p.Kill()
			return fmt.Errorf("sample-generic-controlplane: %w", err)
		}
		*into = append(*into, time.Since(start).Seconds())
		if into == &r.restart {
			time.Sleep(idle) // the figure is memory at rest
			r.rss = append(r.rss, rssMB(p.Cmd.Process.Pid))
		}
		if err := p.Stop(); err != nil {
			return err
		}
	}
	return nil
}

// measureAnchor does the same with etcd started first, then the upstream
// sample apiserver against it. Time runs from etcd's exec to the
// apiserver's readiness: what a user waits for.
func measureAnchor(apiserver, etcd string, idle time.Duration, r *results) error {
	dir, err := os.MkdirTemp("", "bench-anchor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	keyFile := filepath.Join(dir, "sa.key")
	if err := writeECKey(keyFile); err != nil {
		return err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = benchutil.FreePort(); err != nil {
			return err
		}
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	etcdArgs := []string{
		"--data-dir=" + filepath.Join(dir, "etcd"), "--name=default",
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--log-level=warn",
	}
	apiArgs := []string{
		"--etcd-servers=" + clientURL, "--secure-port=" + strconv.Itoa(ports[2]), "--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		// Same authorization as ours; it also lets the anonymous probe read /readyz.
		"--authorization-mode=RBAC",
	}
	for i, into := range []*[]float64{&r.first, &r.restart} {
		start := time.Now()
		e, err := benchutil.Start(etcd, etcdArgs, filepath.Join(dir, fmt.Sprintf("etcd-log-%d", i)))
		if err != nil {
			return err
		}
		a, err := benchutil.Start(apiserver, apiArgs, filepath.Join(dir, fmt.Sprintf("apiserver-log-%d", i)))
		if err != nil {
			e.Kill()
			return err
		}
		if err := benchutil.WaitReady(ports[2], a, 60*time.Second); err != nil {
			a.Kill()
			e.Kill()
			return fmt.Errorf("anchor: %w", err)
		}
		*into = append(*into, time.Since(start).Seconds())
		if into == &r.restart {
			time.Sleep(idle)
			r.rss = append(r.rss, rssMB(a.Cmd.Process.Pid)+rssMB(e.Cmd.Process.Pid))
		}
		if err := a.Stop(); err != nil {
			e.Kill()
			return err
		}
		if err := e.Stop(); err != nil {
			return err
		}
	}
	return nil
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
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// rssMB reads the resident set size of pid, in MiB.
func rssMB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
