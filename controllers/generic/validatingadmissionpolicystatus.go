package generic

import (
	"context"
	"fmt"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	pluginvalidatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	k8sscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	policyStatusShortName = "validatingadmissionpolicy-status"
	policyStatusIdentity  = "validatingadmissionpolicy-status-controller"
	policyStatusWorkers   = 5 // as kube-controller-manager
)

// ValidatingAdmissionPolicyStatusDescriptor is upstream's policy status
// controller (k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus):
// a ValidatingAdmissionPolicy's CEL expressions are type-checked against
// the schemas of the resources it matches, custom resources included, and
// the warnings land in its status.typeChecking, as in a real cluster.
func ValidatingAdmissionPolicyStatusDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           names.ValidatingAdmissionPolicyStatusController,
		Aliases:        []string{policyStatusShortName},
		ReportedName:   policyStatusShortName,
		ServiceAccount: policyStatusIdentity,
		New:            newValidatingAdmissionPolicyStatusController,
	}
}

func newValidatingAdmissionPolicyStatusController(_ context.Context, c *controller.Context) (controller.Run, error) {
	discoveryClient, err := c.ClientBuilder.DiscoveryClient(policyStatusIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", policyStatusShortName, err)
	}
	client, err := c.ClientBuilder.Client(policyStatusIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", policyStatusShortName, err)
	}
	// Built-in types from the compiled-in OpenAPI definitions, CRDs from
	// the server's published schemas.
	schemaResolver := resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, k8sscheme.Scheme, apiextensionsscheme.Scheme).
		Combine(&resolver.ClientDiscoveryResolver{Discovery: discoveryClient})
	sc, err := validatingadmissionpolicystatus.NewController(
		c.InformerFactory.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		client.AdmissionregistrationV1().ValidatingAdmissionPolicies(),
		&pluginvalidatingadmissionpolicy.TypeChecker{SchemaResolver: schemaResolver, RestMapper: c.RESTMapper},
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", policyStatusShortName, err)
	}
	return func(ctx context.Context) { sc.Run(ctx, policyStatusWorkers) }, nil
}
