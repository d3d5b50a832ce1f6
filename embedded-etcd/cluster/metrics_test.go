package cluster

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// TestMemberMetrics is not parallel: the gauges are the process's, and
// the parallel tests' List calls set them too.
func TestMemberMetrics(t *testing.T) {
	registerMetrics()
	metrics := []string{"sample_generic_controlplane_etcd_members", "sample_generic_controlplane_etcd_member_healthy"}
	const header = `
# HELP sample_generic_controlplane_etcd_member_healthy [ALPHA] Whether an etcd member reported its status within the report's duration (1) or not (0), by member name.
# TYPE sample_generic_controlplane_etcd_member_healthy gauge
`
	const membersHeader = `
# HELP sample_generic_controlplane_etcd_members [ALPHA] Number of members of the etcd cluster, by role (voter, learner).
# TYPE sample_generic_controlplane_etcd_members gauge
`
	steps := []struct {
		name    string
		members []MemberStatus
		want    string
	}{
		{
			name: "three voters and a learner not started",
			members: []MemberStatus{
				{Name: "a", ID: "1", Healthy: true}, {Name: "b", ID: "2", Healthy: true}, {Name: "c", ID: "3"},
				{ID: "4", Learner: true},
			},
			want: header + `sample_generic_controlplane_etcd_member_healthy{member="4"} 0
sample_generic_controlplane_etcd_member_healthy{member="a"} 1
sample_generic_controlplane_etcd_member_healthy{member="b"} 1
sample_generic_controlplane_etcd_member_healthy{member="c"} 0
` + membersHeader + `sample_generic_controlplane_etcd_members{role="learner"} 1
sample_generic_controlplane_etcd_members{role="voter"} 3
`,
		},
		{
			name:    "removed members leave no series",
			members: []MemberStatus{{Name: "a", ID: "1", Healthy: true}},
			want: header + `sample_generic_controlplane_etcd_member_healthy{member="a"} 1
` + membersHeader + `sample_generic_controlplane_etcd_members{role="learner"} 0
sample_generic_controlplane_etcd_members{role="voter"} 1
`,
		},
	}
	for _, step := range steps {
		setMemberMetrics(step.members)
		if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(step.want), metrics...); err != nil {
			t.Errorf("%s: %v", step.name, err)
		}
	}
}
