package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// memory is what the control plane's /metrics says of its memory, read
// right after a garbage collection that /debug/pprof/heap?gc=1 forced: live
// is the Go heap that survived it (go_memstats_heap_alloc_bytes), rss the
// process's resident set (process_resident_memory_bytes). Both are the
// whole process: API server, watch cache, embedded etcd and controllers.
type memory struct {
	live, rss float64
	// collected says whether the GC was forced; without profiling it was
	// not, and live includes garbage.
	collected bool
	// busy says the process had not come to idle within a minute.
	busy bool
}

// readMemory waits until the control plane idles (its informers and
// controllers have caught up), forces a GC and reads its memory.
func readMemory(ctx context.Context, client rest.Interface) (memory, error) {
	idle, err := settle(ctx, client)
	if err != nil {
		return memory{}, err
	}
	_, gcErr := client.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx)
	metrics, err := readMetrics(ctx, client, "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes")
	if err != nil {
		return memory{}, err
	}
	return memory{live: metrics[0], rss: metrics[1], collected: gcErr == nil, busy: !idle}, nil
}

// settle waits, up to a minute, until the process used less than a tenth
// of a CPU over a second, and tells whether it did.
func settle(ctx context.Context, client rest.Interface) (bool, error) {
	last := -1.0
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		m, err := readMetrics(ctx, client, "process_cpu_seconds_total")
		if err != nil {
			return false, err
		}
		idle := last >= 0 && m[0]-last < 0.1
		last = m[0]
		return idle, nil
	})
	if wait.Interrupted(err) {
		return false, nil
	}
	return err == nil, err
}

// readMetrics returns the values of unlabelled gauges and counters from
// /metrics, in the order of names.
func readMetrics(ctx context.Context, client rest.Interface, names ...string) ([]float64, error) {
	families, err := scrapeMetrics(ctx, client)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(names))
	for i, name := range names {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return nil, fmt.Errorf("/metrics has no %s", name)
		}
		m := f.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			out[i] = m.GetGauge().GetValue()
		case m.Counter != nil:
			out[i] = m.GetCounter().GetValue()
		default:
			out[i] = m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

// perClaim formats bytes per claim, from the growth of a figure over n
// claims.
func perClaim(before, after float64, n int) string {
	return fmt.Sprintf("%.2f KiB", (after-before)/float64(n)/1024)
}

// mib formats bytes in MiB.
func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// scrapeMetrics reads and parses the control plane's /metrics.
func scrapeMetrics(ctx context.Context, client rest.Interface) (map[string]*dto.MetricFamily, error) {
	body, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	return families, nil
}
