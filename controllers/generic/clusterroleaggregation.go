package generic

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	clusterRoleAggregationShortName = "clusterrole-aggregation"
	clusterRoleAggregationIdentity  = "clusterrole-aggregation-controller"
	clusterRoleAggregationWorkers   = 5 // as kube-controller-manager
)

// ClusterRoleAggregationDescriptor is upstream's cluster role aggregation
// controller (k8s.io/kubernetes/pkg/controller/clusterroleaggregation): a
// ClusterRole with an aggregationRule, such as admin, edit and view,
// gathers the rules of every ClusterRole its selectors match.
func ClusterRoleAggregationDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.ClusterRoleAggregationController,
		Aliases:        []string{clusterRoleAggregationShortName},
		ReportedName:   clusterRoleAggregationShortName,
		ServiceAccount: clusterRoleAggregationIdentity,
		New:            newClusterRoleAggregationController,
	}
}

func newClusterRoleAggregationController(_ context.Context, c *controller.Context) (controller.Run, error) {
	client, err := c.ClientBuilder.Client(clusterRoleAggregationIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clusterRoleAggregationShortName, err)
	}
	cc := clusterroleaggregation.NewClusterRoleAggregation(c.InformerFactory.Rbac().V1().ClusterRoles(), client.RbacV1())
	return func(ctx context.Context) { cc.Run(ctx, clusterRoleAggregationWorkers) }, nil
}
