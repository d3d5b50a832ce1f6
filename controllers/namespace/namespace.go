// Package namespace deletes namespaces: once a namespace is deleted, it
// empties it of every resource with upstream's deleter
// (k8s.io/kubernetes/pkg/controller/namespace/deletion) and removes it.
//
// It is upstream's namespace controller with one setting more: how long
// after a namespace's deletion it starts emptying it. Upstream waits a
// fixed 5 s so that lifecycle admission on other API servers, and etcd
// members other than the leader, see the deletion before the namespace's
// content is listed. That is this controller's default too. A control plane
// whose API server is the only one on its storage (a test server) can start
// at once: its own NamespaceLifecycle admission looks the namespace up in
// storage for every create once it has admitted the namespace's delete, so
// no new content can be admitted after the deletion is stored. What a zero
// grace period still races is a create admitted just before the deletion
// and stored after the deleter listed its resource; it outlives the
// namespace (until the garbage collector takes it, when it has an owner).
package namespace

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/namespace/deletion"
)

// DefaultDeletionGracePeriod is upstream's wait between a namespace's
// deletion and the first attempt to empty it.
const DefaultDeletionGracePeriod = 5 * time.Second

// Controller empties and removes deleted namespaces.
type Controller struct {
	lister corelisters.NamespaceLister
	// handlerSynced is true once the informer's first list has reached
	// the handlers.
	handlerSynced cache.InformerSynced
	queue         workqueue.TypedRateLimitingInterface[string]
	deleter       deletion.NamespacedResourcesDeleterInterface
	gracePeriod   time.Duration
}

// NewController returns a controller that starts emptying a namespace
// gracePeriod after it sees its deletion, with deleter.
func NewController(informer coreinformers.NamespaceInformer, deleter deletion.NamespacedResourcesDeleterInterface, gracePeriod, resyncPeriod time.Duration) (*Controller, error) {
	c := &Controller{
		lister: informer.Lister(),
		// Upstream's limits: a failing namespace is retried at least every
		// minute, and retries of all namespaces together at 10 per second.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"},
		),
		deleter:     deleter,
		gracePeriod: gracePeriod,
	}
	registration, err := informer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	}, resyncPeriod)
	if err != nil {
		return nil, err
	}
	c.handlerSynced = registration.HasSynced
	return c, nil
}

// enqueue queues a deleted namespace, after the grace period.
func (c *Controller) enqueue(obj interface{}) {
	ns, ok := obj.(*v1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.queue.AddAfter(ns.Name, c.gracePeriod)
}

// Run empties deleted namespaces with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	// V(2), as the other controllers' start and stop: a calm start says
	// nothing but that it is ready.
	logger.V(2).Info("Starting namespace controller", "deletionGracePeriod", c.gracePeriod)
	var wg sync.WaitGroup
	defer func() {
		logger.V(2).Info("Shutting down namespace controller")
		c.queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.handlerSynced) {
		return
	}
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	err := c.sync(ctx, name)
	var remaining *deletion.ResourcesRemainingError
	switch {
	case err == nil:
		c.queue.Forget(name)
	case errors.As(err, &remaining):
		// Content with finalizers or a graceful deletion is going: look
		// again in about half the time it estimated, as upstream does.
		wait := time.Duration(remaining.Estimate/2+1) * time.Second
		klog.FromContext(ctx).V(4).Info("Content remaining in namespace", "namespace", name, "wait", wait)
		c.queue.AddAfter(name, wait)
	default:
		c.queue.AddRateLimited(name)
		utilruntime.HandleErrorWithContext(ctx, err, "Deletion of namespace failed", "namespace", name)
	}
	return true
}

// sync empties and removes namespace name if it is being deleted; the
// deleter does nothing for a namespace that is not.
func (c *Controller) sync(ctx context.Context, name string) error {
	if _, err := c.lister.Get(name); apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Namespace has been deleted", "namespace", name)
		return nil
	} else if err != nil {
		return err
	}
	return c.deleter.Delete(ctx, name)
}
