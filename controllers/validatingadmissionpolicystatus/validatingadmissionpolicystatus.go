// Package validatingadmissionpolicystatus runs upstream's policy status
// controller (k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus):
// a ValidatingAdmissionPolicy's CEL expressions are type-checked against the
// schemas of the resources it matches, custom resources included, and the
// warnings land in its status.typeChecking, as in a real cluster.
package validatingadmissionpolicystatus

import (
	"context"
	"fmt"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	pluginvalidatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	k8sscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name     = "validatingadmissionpolicy-status"
	identity = "validatingadmissionpolicy-status-controller"
	workers  = 5 // as kube-controller-manager
)

// New builds the controller; run the returned function to start it.
func New(_ context.Context, c *controller.Context) (func(context.Context), error) {
	discoveryClient, err := c.ClientBuilder.DiscoveryClient(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	client, err := c.ClientBuilder.Client(identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// Built-in types from the compiled-in OpenAPI definitions, CRDs from
	// the server's published schemas.
	schemaResolver := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, k8sscheme.Scheme, apiextensionsscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: discoveryClient})
	controller, err := validatingadmissionpolicystatus.NewController(
		c.InformerFactory.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		client.AdmissionregistrationV1().ValidatingAdmissionPolicies(),
		&pluginvalidatingadmissionpolicy.TypeChecker{SchemaResolver: schemaResolver, RestMapper: c.RESTMapper},
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return func(ctx context.Context) { controller.Run(ctx, workers) }, nil
}

// Descriptor registers the controller with the manager.
func Descriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{"validatingadmissionpolicy-status-controller"},
		ServiceAccount: identity,
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}
