package maintenance

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
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

// spaceSeries are the label values of the gauges one monitor set.
type spaceSeries struct {
	members sets.Set[string]
	alarms  sets.Set[[2]string]
}

// setSpaceMetrics sets the gauges from a check, and deletes the series
// that prev (what the monitor set last) has and st has not: of members
// that did not answer, and of alarms no longer raised. Series of other
// monitors in the process (several control planes in one test) are left
// alone.
func setSpaceMetrics(prev *spaceSeries, st *Status) *spaceSeries {
	registerMetrics()
	cur := &spaceSeries{members: sets.New[string](), alarms: sets.New[[2]string]()}
	for _, m := range st.Members {
		if !m.Reached() {
			continue
		}
		name := m.DisplayName()
		cur.members.Insert(name)
		dbSizeMetric.WithLabelValues(name).Set(float64(m.DBSize))
		dbSizeInUseMetric.WithLabelValues(name).Set(float64(m.DBSizeInUse))
		dbQuotaMetric.WithLabelValues(name).Set(float64(m.Quota))
	}
	for _, a := range st.Alarms {
		cur.alarms.Insert([2]string{a.Member, a.Type})
		alarmMetric.WithLabelValues(a.Member, a.Type).Set(1)
	}
	if prev != nil {
		for name := range prev.members.Difference(cur.members) {
			for _, g := range []*metrics.GaugeVec{dbSizeMetric, dbSizeInUseMetric, dbQuotaMetric} {
				g.DeleteLabelValues(name)
			}
		}
		for a := range prev.alarms.Difference(cur.alarms) {
			alarmMetric.DeleteLabelValues(a[0], a[1])
		}
	}
	return cur
}
