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

// TestPolicyReferringToMissingFieldGetsTypeCheckWarning: the policy status
// controller type-checks a policy's expressions against the schemas the
// server publishes, for a CRD, a built-in type and the control plane's own
// API group alike.
func TestPolicyReferringToMissingFieldGetsTypeCheckWarning(t *testing.T) {
	s := sharedServer(t)
	createCRD(t, s.ClientConfig, "probes", "Probe") // its schema has no fields at all
	// The controller type-checks a policy once per generation, against the
	// schemas the server publishes. A CRD's schema is published a moment
	// after it is established (later under load); a policy checked before
	// then gets no warning until it changes, as in any cluster. Create it
	// once the schema is there.
	waitForOpenAPISchema(t, s.ClientConfig, "apis/gc.example.com/v1", "com.example.gc.v1.Probe")
	for _, tc := range []struct {
		name string
		rule admissionregistrationv1.Rule
		// missing is the field the expression names that the type lacks.
		missing string
	}{
		{name: "custom resource", rule: admissionregistrationv1.Rule{APIGroups: []string{"gc.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"probes"}}, missing: "spec"},
		{name: "built-in type", rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}, missing: "spec"},
		{name: "NetworkClaim", rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.x-k8s.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"networkclaims"}}, missing: "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			name := "replicas-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			policies := kubernetes.NewForConfigOrDie(s.ClientConfig).AdmissionregistrationV1().ValidatingAdmissionPolicies()
			if _, err := policies.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
					MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionregistrationv1.RuleWithOperations{
							Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
							Rule:       tc.rule,
						},
					}}},
					Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > 0"}},
				},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := policies.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}); err != nil {
					t.Error(err)
				}
			})
			var warnings []admissionregistrationv1.ExpressionWarning
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
				p, err := policies.Get(ctx, name, metav1.GetOptions{})
				if err != nil || p.Status.TypeChecking == nil {
					return false, err
				}
				warnings = p.Status.TypeChecking.ExpressionWarnings
				return len(warnings) > 0, nil
			})
			if err != nil {
				t.Fatalf("no type-checking warning in the policy's status: %v", err)
			}
			if w := warnings[0]; w.FieldRef != "spec.validations[0].expression" || !strings.Contains(w.Warning, tc.missing) {
				t.Fatalf("warning %+v does not point at the expression and the missing field %q", w, tc.missing)
			}
		})
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
