package resourcequota

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
)

// genericCoreResources are the core/v1 resources a generic control plane
// serves: upstream's generic core storage
// (k8s.io/kubernetes/pkg/registry/core/rest, GenericConfig). Pods,
// services, persistent volume claims and replication controllers are not
// among them.
var genericCoreResources = sets.New("configmaps", "events", "namespaces", "resourcequotas", "secrets", "serviceaccounts")

// served reports whether the generic control plane serves a resource that
// upstream's core quota evaluators know.
func served(gr schema.GroupResource) bool {
	return gr.Group == corev1.GroupName && genericCoreResources.Has(gr.Resource)
}

// NewConfiguration is the quota configuration that the ResourceQuota
// admission plugin and the resource quota controller share, so that what
// admission enforces is what the controller calculates. It is upstream's
// (kube-apiserver's and kube-controller-manager's, from
// k8s.io/kubernetes/pkg/quota/v1/install) for the resources this control
// plane serves: object counts under both names kube-controller-manager
// computes (configmaps and count/configmaps, secrets, resourcequotas), and
// none of the evaluators of the container domain (pods, services, storage,
// cpu, memory), whose resources are never created here.
//
// Every other resource, custom resources included, is counted as
// count/<resource>[.<group>] by an object-count evaluator that admission
// adds on first use and the controller adds when discovery finds the
// resource.
//
// listerFor gives the controller's listers; admission passes nil (it
// charges the object in the request and never lists).
func NewConfiguration(listerFor quota.ListerForResourceFunc) (quota.Configuration, error) {
	// The informer factory is read only by the resource claim evaluator,
	// which served leaves out.
	evaluators, err := core.NewEvaluators(listerFor, nil, func(gvr schema.GroupVersionResource) bool {
		return served(gvr.GroupResource())
	})
	if err != nil {
		return nil, fmt.Errorf("building the quota evaluators: %w", err)
	}
	// The legacy object-count aliases come without the predicate;
	// replicationcontrollers is one of them.
	kept := evaluators[:0]
	for _, e := range evaluators {
		if served(e.GroupResource()) {
			kept = append(kept, e)
		}
	}
	return generic.NewConfiguration(kept, quotainstall.DefaultIgnoredResources()), nil
}
