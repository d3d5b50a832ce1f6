package resourcequota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// fakeMapper serves the resources in known; a resource in late is found
// only after a Reset, like a CRD created since the mapper last looked.
type fakeMapper struct {
	known  map[schema.GroupResource]schema.GroupVersionResource
	late   map[schema.GroupResource]schema.GroupVersionResource
	resets int
}

func (m *fakeMapper) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	if gvr, ok := m.known[in.GroupResource()]; ok {
		return gvr, nil
	}
	return schema.GroupVersionResource{}, &meta.NoResourceMatchError{PartialResource: in}
}

func (m *fakeMapper) Reset() {
	m.resets++
	for gr, gvr := range m.late {
		m.known[gr] = gvr
	}
}

func widget(ns, name string) runtime.Object {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
}

func newTestRegistry(t *testing.T, mapper *fakeMapper, objects ...runtime.Object) *registry {
	t.Helper()
	config, err := NewConfiguration(nil)
	if err != nil {
		t.Fatal(err)
	}
	scheme := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	client := metadatafake.NewSimpleMetadataClient(scheme, objects...)
	return newRegistry(config.Evaluators(), config.IgnoredResources(), mapper, client)
}

func TestUnmonitoredMatchingResources(t *testing.T) {
	r := newTestRegistry(t, &fakeMapper{})
	tests := []struct {
		name  corev1.ResourceName
		match bool
	}{
		{"count/widgets.example.com", true},
		{"count/leases.coordination.k8s.io", true},
		{"count/pods", true}, // counted only if served: see UsageStats
		{"count/configmaps", false},
		{"configmaps", false},
		{"count/secrets", false},
		{"count/resourcequotas", false},
		{"count/events", false}, // ignored by quota, as upstream
		{"count/events.events.k8s.io", false},
		{"pods", false},
		{"cpu", false},
		{"requests.storage", false},
		{"count/", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.name), func(t *testing.T) {
			got := r.unmonitored.MatchingResources([]corev1.ResourceName{tc.name})
			if (len(got) == 1) != tc.match {
				t.Errorf("MatchingResources(%s) = %v, want a match: %v", tc.name, got, tc.match)
			}
		})
	}
}

func TestUnmonitoredUsageStats(t *testing.T) {
	mapper := &fakeMapper{
		known: map[schema.GroupResource]schema.GroupVersionResource{},
		late:  map[schema.GroupResource]schema.GroupVersionResource{widgets.GroupResource(): widgets},
	}
	r := newTestRegistry(t, mapper, widget("a", "w1"), widget("a", "w2"), widget("b", "w3"))
	stats, err := r.unmonitored.UsageStats(quota.UsageStatsOptions{
		Namespace: "a",
		Resources: []corev1.ResourceName{"count/widgets.example.com", "count/pods", "count/gone.example.com", "cpu"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceList{"count/widgets.example.com": resource.MustParse("2")}
	if !quota.Equals(stats.Used, want) {
		t.Errorf("used = %v, want %v: the two widgets of namespace a, and nothing for what is not served", stats.Used, want)
	}
	if mapper.resets == 0 {
		t.Error("a resource unknown to the mapper must be looked up again after a refresh")
	}
}

// TestRegistryHandsOverToTheMonitor: once the quota monitor has added an
// evaluator for a resource, that one counts it, and the unmonitored
// evaluator no longer matches it.
func TestRegistryHandsOverToTheMonitor(t *testing.T) {
	r := newTestRegistry(t, &fakeMapper{})
	name := []corev1.ResourceName{"count/widgets.example.com"}
	if got := r.unmonitored.MatchingResources(name); len(got) != 1 {
		t.Fatalf("before the monitor: unmonitored matches %v", got)
	}
	if r.Get(widgets.GroupResource()) != nil {
		t.Fatal("Get must not return the unmonitored evaluator: the monitor would then add none of its own")
	}
	monitored := &countingEvaluator{gr: widgets.GroupResource()}
	r.Add(monitored)
	if got := r.unmonitored.MatchingResources(name); len(got) != 0 {
		t.Errorf("after the monitor added its evaluator: unmonitored still matches %v", got)
	}
	list := r.List()
	if list[len(list)-1] != r.unmonitored {
		t.Errorf("List must end with the unmonitored evaluator")
	}
}

// countingEvaluator stands for the monitor's object-count evaluator.
type countingEvaluator struct {
	quota.Evaluator
	gr schema.GroupResource
}

func (e *countingEvaluator) GroupResource() schema.GroupResource { return e.gr }
