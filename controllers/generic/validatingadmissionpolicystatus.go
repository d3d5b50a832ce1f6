package generic

import (
	"context"
	"fmt"

	pluginvalidatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"

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
	// Every schema from what the server publishes (OpenAPI v3): built-in
	// types, the control plane's own API groups and CRDs alike.
	// kube-controller-manager resolves built-in types from the compiled-in
	// definitions first; in-process that map would be a second copy, some
	// 7 MB of live heap for the life of the process, of what the API server
	// keeps already. A type check runs once per policy generation, and costs
	// a few requests here.
	schemaResolver := &resolver.ClientDiscoveryResolver{Discovery: discoveryClient}
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
