package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestPolicyReferringToMissingCRDFieldGetsTypeCheckWarning(t *testing.T) {
	s := sharedServer(t)
	ctx := t.Context()
	createCRD(t, s.ClientConfig, "probes", "Probe") // its schema has no fields at all
	// The controller type-checks a policy once per generation, against the
	// schemas the server publishes. A CRD's schema is published a moment
	// after it is established (later under load); a policy checked before
	// then gets no warning until it changes, as in any cluster. Create it
	// once the schema is there.
	waitForOpenAPISchema(t, s.ClientConfig, "apis/gc.example.com/v1", "com.example.gc.v1.Probe")
	policies := kubernetes.NewForConfigOrDie(s.ClientConfig).AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := policies.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"gc.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"probes"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > 0"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var warnings []admissionregistrationv1.ExpressionWarning
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := policies.Get(ctx, "probe-replicas", metav1.GetOptions{})
		if err != nil || p.Status.TypeChecking == nil {
			return false, err
		}
		warnings = p.Status.TypeChecking.ExpressionWarnings
		return len(warnings) > 0, nil
	})
	if err != nil {
		t.Fatalf("no type-checking warning in the policy's status: %v", err)
	}
	if w := warnings[0]; w.FieldRef != "spec.validations[0].expression" || !strings.Contains(w.Warning, "spec") {
		t.Fatalf("warning %+v does not point at the expression and the missing field", w)
	}
}

// waitForOpenAPISchema waits until the server's OpenAPI v3 document at path
// defines the named schema.
func waitForOpenAPISchema(t *testing.T, cfg *rest.Config, path, schema string) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(cfg).Discovery()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		paths, err := client.OpenAPIV3().Paths()
		if err != nil || paths[path] == nil {
			return false, nil
		}
		doc, err := paths[path].Schema(runtime.ContentTypeJSON)
		return err == nil && strings.Contains(string(doc), `"`+schema+`"`), nil
	})
	if err != nil {
		t.Fatalf("the OpenAPI v3 document %s never defined %s: %v", path, schema, err)
	}
}
