// Package clusterroleaggregation runs upstream's cluster role aggregation
// controller (k8s.io/kubernetes/pkg/controller/clusterroleaggregation): a
// ClusterRole with an aggregationRule, such as admin, edit and view, gathers
// the rules of every ClusterRole its selectors match.
package clusterroleaggregation

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "clusterrole-aggregation"
	identity = "clusterrole-aggregation-controller"
	workers  = 5 // as kube-controller-manager
)

// New builds the controller; run the returned function to start it.
func New(_ context.Context, c *controller.Context) (func(context.Context), error) {
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	controller := clusterroleaggregation.NewClusterRoleAggregation(c.InformerFactory.Rbac().V1().ClusterRoles(), client.RbacV1())
	return func(ctx context.Context) { controller.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"clusterrole-aggregation-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}
