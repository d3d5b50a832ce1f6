package generic

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	serviceAccountShortName = "serviceaccount"
	serviceAccountIdentity  = "service-account-controller"
	serviceAccountWorkers   = 1 // as kube-controller-manager
)

// ServiceAccountDescriptor is upstream's service account controller
// (k8s.io/kubernetes/pkg/controller/serviceaccount): every namespace gets
// its "default" service account.
func ServiceAccountDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.ServiceAccountController,
		Aliases:        []string{serviceAccountShortName},
		ReportedName:   serviceAccountShortName,
		ServiceAccount: serviceAccountIdentity,
		New:            newServiceAccountController,
	}
}

func newServiceAccountController(ctx context.Context, c *controller.Context) (controller.Run, error) {
	client, err := c.ClientBuilder.Client(serviceAccountIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", serviceAccountShortName, err)
	}
	sc, err := sacontroller.NewServiceAccountsController(klog.FromContext(ctx),
		c.InformerFactory.Core().V1().ServiceAccounts(), c.InformerFactory.Core().V1().Namespaces(),
		client, sacontroller.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", serviceAccountShortName, err)
	}
	return func(ctx context.Context) { sc.Run(ctx, serviceAccountWorkers) }, nil
}
