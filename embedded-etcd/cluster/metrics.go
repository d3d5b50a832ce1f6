package cluster

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
	// membersMetric counts the members by role.
	membersMetric = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "members",
		Help:           "Number of members of the etcd cluster, by role (voter, learner).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"role"})
	// memberHealthy is 1 for a member whose status report is current.
	memberHealthy = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "member_healthy",
		Help:           "Whether an etcd member reported its status within the report's duration (1) or not (0), by member name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"member"})
)

var registerMetrics = sync.OnceFunc(func() {
	legacyregistry.MustRegister(membersMetric, memberHealthy)
})

// metricsMu keeps a List's reset and sets from interleaving with another's.
var metricsMu sync.Mutex

// setMemberMetrics sets the gauges from a List. A removed member's series
// goes: the health gauge is rebuilt each time.
func setMemberMetrics(members []MemberStatus) {
	metricsMu.Lock()
	defer metricsMu.Unlock()
	counts := map[string]int{"voter": 0, "learner": 0}
	memberHealthy.Reset()
	for _, m := range members {
		counts[m.Role()]++
		healthy := 0.0
		if m.Healthy {
			healthy = 1
		}
		memberHealthy.WithLabelValues(displayName(m)).Set(healthy)
	}
	for role, n := range counts {
		membersMetric.WithLabelValues(role).Set(float64(n))
	}
}
