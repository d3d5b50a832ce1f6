package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// DiscoveryAfterFirstSuccess retries discover until it returns resources (or
// ctx ends) and returns a discovery function whose first call answers with
// that result. Upstream's namespace and quota controllers call discovery
// once while they are built, and the first exits the process
// (klog.FlushAndExit) while the second fails to start when that returns
// nothing. In a control plane that also serves the API, a passing hiccup
// must not take everything down: one is a controller's first request with
// the token of a service account created a moment before, which upstream's
// generic token lookup (informer cache only) may not know yet.
func DiscoveryAfterFirstSuccess(ctx context.Context, discover func() ([]*metav1.APIResourceList, error)) (func() ([]*metav1.APIResourceList, error), error) {
	var first []*metav1.APIResourceList
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		resources, err := discover()
		if len(resources) == 0 {
			klog.FromContext(ctx).V(1).Info("Namespaced resources not discovered yet", "err", err)
			return false, nil
		}
		first = resources
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("discovering namespaced resources: %w", err)
	}
	var used atomic.Bool
	return func() ([]*metav1.APIResourceList, error) {
		if used.CompareAndSwap(false, true) {
			return first, nil
		}
		return discover()
	}, nil
}
