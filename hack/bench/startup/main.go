// Command startup measures time to ready and idle memory of
// sample-generic-controlplane beside its anchor: the upstream generic sample
// apiserver (k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic)
// with a separately started etcd (go.etcd.io/etcd/server/v3) and
// kube-controller-manager running the generic controllers, all built from
// this module's graph. Each figure is the median of -runs runs,
// measured in the same invocation so that machine noise hits both sides.
// It also times what a Go test suite waits for: controlplane/testing.Start
// in this process, on a fresh data dir, to ready (no anchor).
//
//	go run ./hack/bench/startup -binary bin/sample-generic-controlplane \
//	    -anchor-apiserver bin/anchor-apiserver -anchor-etcd bin/anchor-etcd -anchor-kcm bin/anchor-kcm
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	anchorKCM := flag.String("anchor-kcm", "bin/anchor-kcm", "kube-controller-manager binary, counted in the anchor's memory; empty leaves it out")
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
		if err := measureAnchor(benchutil.AnchorBinaries{Etcd: *anchorEtcd, APIServer: *anchorAPIServer, KCM: *anchorKCM}, *idle, &anchor); err != nil {
			benchutil.Fail(err)
		}
		if err := measureInProcess(&ours); err != nil {
			benchutil.Fail(err)
		}
	}
	benchutil.Header(fmt.Sprintf("start-up and idle memory, median of %d runs (min-max)", *runs), "sample-generic-cp", "anchor (etcd+sample+kcm)")
	benchutil.Row("first start to ready (s)", ours.first, anchor.first, seconds)
	benchutil.Row("restart to ready (s)", ours.restart, anchor.restart, seconds)
	benchutil.Row("idle RSS (MiB)", ours.rss, anchor.rss, megabytes)
	benchutil.Row("  file-backed: code, read-only data (MiB)", ours.rssFile, anchor.rssFile, megabytes)
	benchutil.Row("  anonymous: heap, stacks (MiB)", ours.rssAnon, anchor.rssAnon, megabytes)
	benchutil.Row("in-process test server to ready (s)", ours.inProcess, nil, seconds)
}

type results struct {
	first, restart, inProcess []float64
	rss, rssFile, rssAnon     []float64
}

func (r *results) addRSS(rss benchutil.RSS) {
	r.rss = append(r.rss, rss.Total())
	r.rssFile = append(r.rssFile, rss.File)
	r.rssAnon = append(r.rssAnon, rss.Anon)
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
	ours, err := benchutil.NewOurs(binary, filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	for i, into := range []*[]float64{&r.first, &r.restart} {
		start := time.Now()
		if err := ours.Start(strconv.Itoa(i)); err != nil {
			return fmt.Errorf("sample-generic-controlplane: %w", err)
		}
		*into = append(*into, time.Since(start).Seconds())
		if into == &r.restart {
			time.Sleep(idle) // the figure is memory at rest
			r.addRSS(benchutil.ReadRSS(ours.Pids()))
		}
		if err := ours.Stop(); err != nil {
			return err
		}
	}
	return nil
}

// measureAnchor does the same with the anchor stack: etcd started first, then
// the upstream sample apiserver against it, then kube-controller-manager.
// Time runs from etcd's exec to the apiserver's readiness, what a user waits
// for; memory is that of all three processes, as ours holds all three.
func measureAnchor(bins benchutil.AnchorBinaries, idle time.Duration, r *results) error {
	dir, err := os.MkdirTemp("", "bench-anchor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	anchor, err := benchutil.NewAnchor(bins, dir)
	if err != nil {
		return err
	}
	for i, into := range []*[]float64{&r.first, &r.restart} {
		start := time.Now()
		if err := anchor.Start(strconv.Itoa(i)); err != nil {
			return err
		}
		*into = append(*into, time.Since(start).Seconds())
		if into == &r.restart {
			time.Sleep(idle)
			r.addRSS(benchutil.ReadRSS(anchor.Pids()))
		}
		if err := anchor.Stop(); err != nil {
			return err
		}
	}
	return nil
}
