package allocation

import (
	"math/big"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
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

var (
	// poolAddresses counts each pool's addresses by state, as its status
	// does (as a float: an IPv6 pool's count exceeds 64 bits).
	poolAddresses = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pool_addresses",
		Help:           "Number of addresses of a delegable NetworkClaim record (a pool), by state: allocated, reserved, cooling (released, in the reuse grace period) and free.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"claim", "prefix", "state"})
	// poolUsedRatio is the part of each pool that first fit cannot hand out.
	poolUsedRatio = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pool_used_ratio",
		Help:           "Part of a delegable NetworkClaim record (a pool) that is allocated, reserved or cooling, from 0 to 1.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"claim", "prefix"})
	// poolSubPrefixes counts the records taken from each pool.
	poolSubPrefixes = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pool_sub_prefixes",
		Help:           "Number of allocated NetworkClaim records taken from a delegable record (a pool).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"claim", "prefix"})
)

var registerMetrics = sync.OnceFunc(func() {
	legacyregistry.MustRegister(recordsMetric, decisionLatency, conflictsTotal, poolExhaustedTotal, poolAddresses, poolUsedRatio, poolSubPrefixes)
})

// setPoolMetrics reports the pools of a claim's status.
func setPoolMetrics(claim string, status []networkingv1alpha1.AddressSpaceStatus) {
	for _, s := range status {
		if s.Pool == nil {
			continue
		}
		size := parseCount(s.Pool.Addresses)
		for state, count := range map[string]string{"allocated": s.Pool.Allocated, "reserved": s.Pool.Reserved, "cooling": s.Pool.Cooling, "free": s.Pool.Free} {
			poolAddresses.WithLabelValues(claim, s.Prefix, state).Set(parseCount(count))
		}
		if size > 0 {
			poolUsedRatio.WithLabelValues(claim, s.Prefix).Set((size - parseCount(s.Pool.Free)) / size)
		}
		poolSubPrefixes.WithLabelValues(claim, s.Prefix).Set(float64(s.Pool.SubPrefixes))
	}
}

// deletePoolMetrics drops the series of a released pool.
func deletePoolMetrics(claim, prefix string) {
	for _, state := range []string{"allocated", "reserved", "cooling", "free"} {
		poolAddresses.DeleteLabelValues(claim, prefix, state)
	}
	poolUsedRatio.DeleteLabelValues(claim, prefix)
	poolSubPrefixes.DeleteLabelValues(claim, prefix)
}

func resetPoolMetrics() {
	poolAddresses.Reset()
	poolUsedRatio.Reset()
	poolSubPrefixes.Reset()
}

// parseCount reads a decimal address count as a float.
func parseCount(s string) float64 {
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil {
		return 0
	}
	v, _ := f.Float64()
	return v
}

func setRecordCounts(allocated, waiting int) {
	recordsMetric.WithLabelValues("Allocated").Set(float64(allocated))
	recordsMetric.WithLabelValues("Unavailable").Set(float64(waiting))
}
