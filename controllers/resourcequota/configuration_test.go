package resourcequota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestConfigurationNames: the names kube-controller-manager computes for
// the resources we serve are matched, and no evaluator of the container
// domain is built (its informers would fail forever here).
func TestConfigurationNames(t *testing.T) {
	config, err := NewConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	matched := map[corev1.ResourceName]schema.GroupResource{}
	for _, e := range config.Evaluators() {
		if !served(e.GroupResource()) {
			t.Errorf("evaluator for %s, which a generic control plane does not serve", e.GroupResource())
		}
		for _, name := range e.MatchingResources([]corev1.ResourceName{
			"configmaps", "count/configmaps", "secrets", "count/secrets", "resourcequotas", "count/resourcequotas",
			"pods", "count/pods", "services", "cpu", "requests.storage", "persistentvolumeclaims", "replicationcontrollers",
		}) {
			matched[name] = e.GroupResource()
		}
	}
	want := map[corev1.ResourceName]string{
		"configmaps": "configmaps", "count/configmaps": "configmaps",
		"secrets": "secrets", "count/secrets": "secrets",
		"resourcequotas": "resourcequotas", "count/resourcequotas": "resourcequotas",
	}
	for name, resource := range want {
		if got := matched[name]; got != (schema.GroupResource{Resource: resource}) {
			t.Errorf("%s is counted by the evaluator of %q, want %q", name, got, resource)
		}
	}
	for name := range matched {
		if _, ok := want[name]; !ok {
			t.Errorf("%s has an evaluator; it names a resource that is not served", name)
		}
	}
	if _, ok := config.IgnoredResources()[schema.GroupResource{Resource: "events"}]; !ok {
		t.Error("events must be ignored by quota, as upstream ignores them")
	}
}
