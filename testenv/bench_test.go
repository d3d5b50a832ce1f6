package testenv

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkStart measures the launcher on a fresh data dir: Start to its
// return (the ready line read, the kubeconfig loaded), to a first namespace
// created (the measure of envtest), and Stop.
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 5x ./
func BenchmarkStart(b *testing.B) {
	var ready, namespace, stop time.Duration
	n := 0
	for b.Loop() {
		begin := time.Now()
		s, err := Start(b.Context(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		ready += time.Since(begin)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "first"}}
		if _, err := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().Namespaces().Create(b.Context(), ns, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		namespace += time.Since(begin)
		begin = time.Now()
		if err := s.Stop(); err != nil {
			b.Fatal(err)
		}
		stop += time.Since(begin)
		n++
	}
	b.ReportMetric(ready.Seconds()/float64(n), "s-ready/op")
	b.ReportMetric(namespace.Seconds()/float64(n), "s-namespace/op")
	b.ReportMetric(stop.Seconds()/float64(n), "s-stop/op")
}

// BenchmarkStartTenInParallel starts ten servers at once, as ten parallel
// tests do, and measures until the last is ready.
func BenchmarkStartTenInParallel(b *testing.B) {
	const servers = 10
	var allReady time.Duration
	n := 0
	for b.Loop() {
		begin := time.Now()
		started := make([]*TestServer, servers)
		errs := make([]error, servers)
		var wg sync.WaitGroup
		for i := range servers {
			wg.Go(func() { started[i], errs[i] = Start(b.Context(), Options{}) })
		}
		wg.Wait()
		allReady += time.Since(begin)
		for i, s := range started {
			if errs[i] != nil {
				b.Error(errs[i])
				continue
			}
			if err := s.Stop(); err != nil {
				b.Error(err)
			}
		}
		n++
	}
	b.ReportMetric(allReady.Seconds()/float64(n), "s-all-ready/op")
}
