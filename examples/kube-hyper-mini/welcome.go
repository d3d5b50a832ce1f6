package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// welcomeName selects the controller in --controllers and names its
	// health check (/livez/controller-welcome).
	welcomeName = "welcome"
	// welcomeIdentity is the service account it acts as.
	welcomeIdentity = "welcome-controller"
	// WelcomeConfigMap is what it writes into every namespace.
	welcomeConfigMap = "welcome"
)

// welcomeDescriptor registers the controller with the manager: its role is
// kept by the control plane (system:controller:welcome-controller), and
// --controllers, leader election and the health checks cover it as they
// cover the generic controllers.
func welcomeDescriptor() controller.Descriptor {
	return controller.Descriptor{
		Name:           welcomeName,
		ServiceAccount: welcomeIdentity,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create"}},
		},
		New: newWelcome,
	}
}

// welcome writes a ConfigMap "welcome" into every active namespace.
type welcome struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
}

func newWelcome(ctx context.Context, c *controller.Context) (controller.Run, error) {
	client, err := c.ClientBuilder.Client(welcomeIdentity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", welcomeName, err)
	}
	informer := c.InformerFactory.Core().V1().Namespaces()
	w := &welcome{
		client:     client,
		namespaces: informer.Lister(),
		synced:     informer.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: welcomeName}),
	}
	// Handlers only enqueue; sync decides.
	_, err = informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
	})
	return w.run, err
}

func (w *welcome) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		w.queue.Add(key)
	}
}

func (w *welcome) run(ctx context.Context) {
	defer w.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, w.synced) {
		return
	}
	go wait.UntilWithContext(ctx, w.work, time.Second)
	<-ctx.Done()
}

func (w *welcome) work(ctx context.Context) {
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.sync(ctx, key); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing namespace", "namespace", key)
			w.queue.AddRateLimited(key)
		} else {
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

// sync writes the welcome ConfigMap into the namespace, if it is active
// and has none. It is idempotent.
func (w *welcome) sync(ctx context.Context, name string) error {
	ns, err := w.namespaces.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && ns.Status.Phase != corev1.NamespaceActive) {
		return nil
	}
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: welcomeConfigMap},
		Data:       map[string]string{"message": "Welcome to kube-hyper-mini."},
	}
	_, err = w.client.CoreV1().ConfigMaps(name).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Welcomed namespace", "namespace", name)
	}
	return err
}
