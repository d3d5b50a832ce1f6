package allocation

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const metricsSubsystem = "networkclaim"

var (
	// recordsMetric counts the ledger's records by status.
	recordsMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "records",
		Help:           "Number of NetworkClaim address-space records in the registry's ledger, by status (Allocated, Unavailable).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"status"})
	// decisionLatency is create-to-decision: from the controller seeing a
	// new record to its decision being stored in the claim's status.
	decisionLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "allocation_decision_duration_seconds",
		Help:           "Time from the registry seeing a new NetworkClaim record to storing its decision (Allocated or Unavailable) in the claim's status.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15), // 1 ms to ~16 s
		StabilityLevel: metrics.ALPHA,
	})
	// conflictsTotal counts records found unavailable.
	conflictsTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "conflicts_total",
		Help:           "Number of NetworkClaim records the registry found unavailable because they overlap a prefix allocated to another claim.",
		StabilityLevel: metrics.ALPHA,
	})
	// poolExhaustedTotal counts records found waiting for room in a pool.
	poolExhaustedTotal = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pool_exhausted_total",
		Help:           "Number of NetworkClaim records taken from a pool that the registry found unavailable because the pool had no free prefix of their length.",
		StabilityLevel: metrics.ALPHA,
	})
)

var registerMetrics = sync.OnceFunc(func() {
	legacyregistry.MustRegister(recordsMetric, decisionLatency, conflictsTotal, poolExhaustedTotal)
})

func setRecordCounts(allocated, waiting int) {
	recordsMetric.WithLabelValues("Allocated").Set(float64(allocated))
	recordsMetric.WithLabelValues("Unavailable").Set(float64(waiting))
}
