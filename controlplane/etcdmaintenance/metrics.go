package etcdmaintenance

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const (
	metricsNamespace = "sample_generic_controlplane"
	metricsSubsystem = "etcd"
)

var (
	dbSizeMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "db_size_bytes",
		Help:           "Size of an etcd member's database file, by member name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member"})
	dbSizeInUseMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "db_size_in_use_bytes",
		Help:           "Part of an etcd member's database file that holds data, by member name; compaction frees the rest, defragmentation gives it back to the filesystem.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member"})
	dbQuotaMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "db_quota_bytes",
		Help:           "Database size at which an etcd member raises its NOSPACE alarm and the cluster refuses writes, by member name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member"})
	alarmMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "alarm",
		Help:           "1 for each alarm an etcd member has raised, by member name and alarm (NOSPACE, CORRUPT).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member", "alarm"})
)

var registerMetrics = sync.OnceFunc(func() {
	legacyregistry.MustRegister(dbSizeMetric, dbSizeInUseMetric, dbQuotaMetric, alarmMetric)
})

// metricsMu keeps one check's reset and sets from interleaving with another's.
var metricsMu sync.Mutex

// setSpaceMetrics sets the gauges from a check: the series of members that
// did not answer, and of alarms no longer raised, go.
func setSpaceMetrics(st *Status) {
	registerMetrics()
	metricsMu.Lock()
	defer metricsMu.Unlock()
	for _, g := range []*metrics.GaugeVec{dbSizeMetric, dbSizeInUseMetric, dbQuotaMetric, alarmMetric} {
		g.Reset()
	}
	for _, m := range st.Members {
		if !m.Reached() {
			continue
		}
		name := m.DisplayName()
		dbSizeMetric.WithLabelValues(name).Set(float64(m.DBSize))
		dbSizeInUseMetric.WithLabelValues(name).Set(float64(m.DBSizeInUse))
		if m.Quota > 0 {
			dbQuotaMetric.WithLabelValues(name).Set(float64(m.Quota))
		}
	}
	for _, a := range st.Alarms {
		alarmMetric.WithLabelValues(a.Member, a.Type).Set(1)
	}
}
