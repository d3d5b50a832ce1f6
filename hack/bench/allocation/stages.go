package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// A stage is one step of a claim's way from create to Allocated that the
// control plane's /metrics times, as a histogram series: name, and the
// labels the series must have.
type stage struct {
	what   string
	name   string
	labels map[string]string
}

// stages are the steps -stages reports, in the order a claim takes them.
var stages = []stage{
	{"create request (API server)", "apiserver_request_duration_seconds", map[string]string{"resource": "networkclaims", "verb": "POST", "subresource": ""}},
	{"  its etcd write", "etcd_request_duration_seconds", map[string]string{"resource": "networkclaims", "operation": "create"}},
	{"watch event to the watchers", "apiserver_watch_events_dispatch_duration_seconds", map[string]string{"resource": "networkclaims"}},
	{"wait in the decider's queue", "workqueue_queue_duration_seconds", map[string]string{"name": "networkclaim-allocation-decisions"}},
	{"decide", "workqueue_work_duration_seconds", map[string]string{"name": "networkclaim-allocation-decisions"}},
	{"wait in the status queue", "workqueue_queue_duration_seconds", map[string]string{"name": "networkclaim-allocation-statuses"}},
	{"write status (worker)", "workqueue_work_duration_seconds", map[string]string{"name": "networkclaim-allocation-statuses"}},
	{"  status request (API server)", "apiserver_request_duration_seconds", map[string]string{"resource": "networkclaims", "verb": "PUT", "subresource": "status"}},
	{"  its etcd write", "etcd_request_duration_seconds", map[string]string{"resource": "networkclaims", "operation": "update"}},
	{"seen to stored (networkclaim metric)", "networkclaim_allocation_decision_duration_seconds", nil},
	{"event create (API server)", "apiserver_request_duration_seconds", map[string]string{"resource": "events", "verb": "POST"}},
	{"Go GC stop-the-world pauses", "go_gc_pauses_seconds", nil},
	// A counter: upstream's watch cache consistency checker lists every
	// claim from etcd and from the cache every 5 to 7.5 minutes.
	{"watch cache consistency checks (ended)", "apiserver_storage_consistency_checks_total", map[string]string{"resource": "networkclaims"}},
}

// histograms are the cumulative bucket counts of each stage's series
// (summed over the series that match), by upper bound.
type histograms [][]bucket

type bucket struct {
	le    float64
	count uint64
}

// readStages reads the stages' histograms from /metrics.
func readStages(ctx context.Context, client rest.Interface) (histograms, error) {
	families, err := scrapeMetrics(ctx, client)
	if err != nil {
		return nil, err
	}
	out := make(histograms, len(stages))
	for i, s := range stages {
		f := families[s.name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case !matches(m, s.labels):
			case m.GetHistogram() != nil:
				out[i] = add(out[i], m.GetHistogram())
			case m.GetCounter() != nil:
				out[i] = add(out[i], &dto.Histogram{SampleCount: ptr.To(uint64(m.GetCounter().GetValue()))})
			}
		}
	}
	return out, nil
}

func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == k {
				got = l.GetValue()
			}
		}
		if got != v {
			return false
		}
	}
	return true
}

func add(sum []bucket, h *dto.Histogram) []bucket {
	addAt := func(le float64, n uint64) {
		i := slices.IndexFunc(sum, func(x bucket) bool { return x.le == le })
		if i < 0 {
			sum = append(sum, bucket{le: le})
			i = len(sum) - 1
		}
		sum[i].count += n
	}
	inf := false
	for _, b := range h.GetBucket() {
		inf = inf || math.IsInf(b.GetUpperBound(), 1)
		addAt(b.GetUpperBound(), b.GetCumulativeCount())
	}
	if !inf {
		addAt(math.Inf(1), h.GetSampleCount())
	}
	slices.SortFunc(sum, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	return sum
}

// reportStages prints, for each stage, how many observations the
// measurement added and how many of them took longer than 10 and 20 ms
// (at the histogram's bucket bounds at or above them).
func reportStages(title string, before, after histograms) {
	fmt.Printf("\n%s: observations during the measurement, by step (from the control plane's /metrics histograms;\n"+
		"\"over\" counts those above the first bucket bound at or past 10 and 20 ms)\n\n", title)
	fmt.Printf("  %-40s %8s %16s %16s\n", "step", "count", "over 10 ms", "over 20 ms")
	for i, s := range stages {
		a, b := after[i], before[i]
		total := countAt(a, math.Inf(1)) - countAt(b, math.Inf(1))
		if len(a) <= 1 { // a counter, or nothing yet
			fmt.Printf("  %-40s %8d\n", s.what, total)
			continue
		}
		over := func(limit float64) string {
			le := math.Inf(1)
			for _, x := range a {
				if x.le >= limit {
					le = x.le
					break
				}
			}
			n := total - (countAt(a, le) - countAt(b, le))
			return fmt.Sprintf("%d (>%.3g ms)", n, le*1000)
		}
		fmt.Printf("  %-40s %8d %16s %16s\n", s.what, total, over(0.010), over(0.020))
	}
}

func countAt(h []bucket, le float64) uint64 {
	for _, b := range h {
		if b.le == le {
			return b.count
		}
	}
	return 0
}
