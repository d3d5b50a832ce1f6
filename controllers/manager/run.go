package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	// Every controller's queue on /metrics (workqueue_depth,
	// workqueue_retries_total, ... by queue name), as in kube-controller-manager.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

func runControllers(ctx context.Context, o *Options, id string, rootConfig *rest.Config, rootClient kubernetes.Interface, health *Health, pending *pendingWork) error {
	logger := klog.FromContext(ctx)
	c, metadataInformers, err := newContext(ctx, o, id, rootConfig, rootClient)
	if err != nil {
		for _, d := range o.descriptors {
			if o.runs(d) {
				health.failed(reportedName(d), "cannot start", err)
			}
		}
		return err
	}
	// A slice, not a map: controllers start in the order they were added.
	type namedRun struct {
		name string
		run  controller.Run
	}
	var runs []namedRun
	for _, d := range o.descriptors {
		if ctx.Err() != nil {
			// Stopped while starting (a start can wait long on an API
			// server whose etcd does not answer): start no more.
			return nil
		}
		name := reportedName(d)
		if gate, off := gatedOff(d); off {
			logger.Info("Controller disabled by a feature gate", "controller", name, "featureGate", gate)
			continue
		}
		if !o.Enabled(d.Name) {
			logger.Info("Controller disabled", "controller", name)
			continue
		}
		if needed, missing := o.missingController(d); missing {
			logger.Info("Controller not started: it needs a controller that --controllers disables", "controller", name, "needs", needed)
			continue
		}
		starting := name + " (starting)"
		pending.add(starting)
		run, err := d.New(ctx, c)
		pending.remove(starting)
		if err != nil {
			// One broken controller must not stop the others.
			logger.Error(err, "Controller cannot start", "controller", name)
			health.failed(name, "cannot start", err)
			continue
		}
		if run == nil { // not configured to do anything; it said why
			continue
		}
		runs = append(runs, namedRun{name, run})
		health.set(name, nil)
		logger.V(2).Info("Controller started", "controller", name)
	}
	c.InformerFactory.Start(ctx.Done())
	defer c.InformerFactory.Shutdown()
	defer metadataInformers.Shutdown()
	c.ObjectOrMetadataInformerFactory.Start(ctx.Done())
	for _, f := range c.ExtraInformerFactories {
		f.Start(ctx.Done())
		defer f.Shutdown()
	}
	close(c.InformersStarted)
	go func() {
		c.InformerFactory.WaitForCacheSync(ctx.Done())
		metadataInformers.WaitForCacheSync(ctx.Done())
		for _, f := range c.ExtraInformerFactories {
			f.WaitForCacheSync(ctx.Done())
		}
		if ctx.Err() == nil {
			health.markSynced()
		}
	}()

	var wg sync.WaitGroup
	for _, r := range runs {
		pending.add(r.name)
		wg.Go(func() {
			defer pending.remove(r.name)
			r.run(ctx)
			if ctx.Err() == nil {
				health.failed(r.name, "stopped", errors.New("the controller returned while the manager runs"))
			}
		})
	}
	wg.Wait()
	return nil
}

func newContext(ctx context.Context, o *Options, id string, rootConfig *rest.Config, rootClient kubernetes.Interface) (*controller.Context, metadatainformer.SharedInformerFactory, error) {
	informerConfig := rest.CopyConfig(rootConfig)
	informerConfig.QPS = -1
	metadataClient, err := metadata.NewForConfig(informerConfig)
	if err != nil {
		return nil, nil, err
	}
	informerClient, err := kubernetes.NewForConfig(informerConfig)
	if err != nil {
		return nil, nil, err
	}
	typed := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informers.WithTransform(controller.TrimManagedFields))
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(rootClient.Discovery()))
	go wait.Until(restMapper.Reset, restMapperResetPeriod, ctx.Done())
	rootCA := rootConfig.CAData
	if o.RootCAFile != "" {
		if rootCA, err = os.ReadFile(o.RootCAFile); err != nil {
			return nil, nil, fmt.Errorf("--root-ca-file: %w", err)
		}
	}
	metadataInformers := metadatainformer.NewSharedInformerFactoryWithOptions(metadataClient, 0, metadatainformer.WithTransform(controller.TrimManagedFields))
	c := &controller.Context{
		ClientBuilder:    clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(rootConfig), rootClient.CoreV1(), identityNamespace),
		InformerFactory:  typed,
		RESTMapper:       restMapper,
		InformersStarted: make(chan struct{}),
		RootCA:           rootCA,
		RootClient:       rootClient,
		ReplicaIdentity:  id,
		Settings:         o.Settings,
	}
	c.ObjectOrMetadataInformerFactory = &objectOrMetadataInformers{
		typed:    typed,
		metadata: metadataInformers,
		extra:    func() []controller.InformerFactory { return c.ExtraInformerFactories },
	}
	return c, metadataInformers, nil
}
