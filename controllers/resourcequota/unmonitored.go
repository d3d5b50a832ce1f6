package resourcequota

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"
)

const (
	// objectCountPrefix starts the generic object-count quota names,
	// count/<resource>[.<group>].
	objectCountPrefix = "count/"
	// listTimeout bounds a live list: usage calculation takes no context
	// that could end it, and a worker must not hang on a server that does
	// not answer.
	listTimeout = 10 * time.Second
)

// resourceMapper finds the served version of a resource; the manager's
// discovery-backed REST mapper, which Reset refreshes.
type resourceMapper interface {
	ResourceFor(schema.GroupVersionResource) (schema.GroupVersionResource, error)
	Reset()
}

// registry is the controller's evaluator registry: upstream's, listing one
// more evaluator that counts the resources no other evaluator covers yet.
//
// Upstream's quota monitor adds an object-count evaluator for a resource
// only once its periodic discovery has found it, and nothing recalculates a
// quota when that happens but the full resync. A quota naming
// count/widgets.example.com for a CRD created moments before would
// meanwhile have no usage for it, and the ResourceQuota admission plugin
// refuses every create of a resource whose usage is unknown ("status
// unknown for quota"). With the unmonitored evaluator the first sync
// already counts them, with a live list; the monitor's evaluator, backed by
// an informer, takes over as soon as it exists.
type registry struct {
	quota.Registry
	unmonitored *unmonitoredEvaluator
}

func newRegistry(evaluators []quota.Evaluator, ignored map[schema.GroupResource]struct{}, mapper resourceMapper, client metadata.Interface) *registry {
	r := &registry{Registry: generic.NewRegistry(evaluators)}
	r.unmonitored = &unmonitoredEvaluator{covered: r.Registry.Get, ignored: ignored, mapper: mapper, client: client}
	return r
}

// List is used to calculate usage, never to look evaluators up by
// resource: Get and Add stay upstream's, so the monitor still adds its own
// evaluator for every resource it discovers.
func (r *registry) List() []quota.Evaluator {
	return append(r.Registry.List(), r.unmonitored)
}

// unmonitoredEvaluator counts objects of resources that a quota names as
// count/<resource>[.<group>] but no evaluator in the registry covers, by
// listing their metadata from the API server. A name for a resource that is
// not served (count/pods, a deleted CRD) gets no usage, as a name that no
// evaluator knows (pods, cpu) does, so it never blocks a create. It serves
// usage calculation only: admission adds evaluators of its own and never
// sees this one.
type unmonitoredEvaluator struct {
	covered func(schema.GroupResource) quota.Evaluator
	ignored map[schema.GroupResource]struct{}
	mapper  resourceMapper
	client  metadata.Interface
}

var _ quota.Evaluator = &unmonitoredEvaluator{}

// groupResourceFor parses count/<resource>[.<group>].
func groupResourceFor(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), objectCountPrefix)
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	return schema.ParseGroupResource(rest), true
}

// MatchingResources returns the object-count names of input that no other
// evaluator covers.
func (e *unmonitoredEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	var matched []corev1.ResourceName
	for _, name := range input {
		gr, ok := groupResourceFor(name)
		if !ok || e.covered(gr) != nil {
			continue
		}
		if _, ignored := e.ignored[gr]; ignored {
			continue
		}
		matched = append(matched, name)
	}
	return matched
}

// UsageStats counts, for each resource in options, the objects in the
// namespace as upstream's object-count evaluator does (scoped quotas match
// none), leaving out resources that are not served.
func (e *unmonitoredEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	stats := quota.UsageStats{Used: corev1.ResourceList{}}
	for _, name := range e.MatchingResources(options.Resources) {
		gr, _ := groupResourceFor(name)
		gvr, err := e.servedVersion(gr)
		if err != nil {
			return stats, err
		}
		if gvr.Empty() {
			continue
		}
		items, err := e.list(gvr, options.Namespace)
		if apierrors.IsNotFound(err) {
			continue // removed since discovery said it is served
		}
		if err != nil {
			return stats, fmt.Errorf("counting %s in %s: %w", gr, options.Namespace, err)
		}
		one := options
		one.Resources = []corev1.ResourceName{name}
		listed := func(string) ([]runtime.Object, error) { return items, nil }
		counted, err := generic.NewObjectCountEvaluator(gr, listed, "").UsageStats(one)
		if err != nil {
			return stats, fmt.Errorf("counting %s in %s: %w", gr, options.Namespace, err)
		}
		stats.Used = quota.Add(stats.Used, counted.Used)
	}
	return stats, nil
}

// servedVersion maps a group resource to the version served, or to nothing
// when it is not served. A resource of a CRD created since the mapper last
// looked is found after one refresh.
func (e *unmonitoredEvaluator) servedVersion(gr schema.GroupResource) (schema.GroupVersionResource, error) {
	gvr, err := e.mapper.ResourceFor(gr.WithVersion(""))
	if meta.IsNoMatchError(err) {
		e.mapper.Reset()
		gvr, err = e.mapper.ResourceFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return schema.GroupVersionResource{}, nil
	}
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("finding the served version of %s: %w", gr, err)
	}
	return gvr, nil
}

// list lists the metadata of a resource's objects in a namespace, in
// pages, straight from the API server.
func (e *unmonitoredEvaluator) list(gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var items []runtime.Object
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return e.client.Resource(gvr).Namespace(namespace).List(ctx, opts)
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		items = append(items, obj)
		return nil
	})
	return items, err
}

// The methods below are admission's; this evaluator is never asked them.

// GroupResource is empty: the evaluator stands for no single resource.
func (e *unmonitoredEvaluator) GroupResource() schema.GroupResource { return schema.GroupResource{} }

// Handles no admission request.
func (e *unmonitoredEvaluator) Handles(admission.Attributes) bool { return false }

// Constraints imposes none, as upstream's object-count evaluator.
func (e *unmonitoredEvaluator) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

// Matches no object: it charges nothing at admission.
func (e *unmonitoredEvaluator) Matches(*corev1.ResourceQuota, runtime.Object) (bool, error) {
	return false, nil
}

// MatchingScopes is none, as for upstream's object-count evaluator.
func (e *unmonitoredEvaluator) MatchingScopes(runtime.Object, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return nil, nil
}

// UncoveredQuotaScopes is none, as for upstream's object-count evaluator.
func (e *unmonitoredEvaluator) UncoveredQuotaScopes([]corev1.ScopedResourceSelectorRequirement, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return nil, nil
}

// Usage of one object is nothing: objects are counted by UsageStats.
func (e *unmonitoredEvaluator) Usage(runtime.Object) (corev1.ResourceList, error) {
	return corev1.ResourceList{}, nil
}
