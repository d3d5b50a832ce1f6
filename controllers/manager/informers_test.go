package manager

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

// ownInformerFactory is a controller's own informer factory whose caches
// sync when the test says.
type ownInformerFactory struct {
	started, waited, synced, shutDown chan struct{}
}

func (f *ownInformerFactory) Start(<-chan struct{}) { close(f.started) }

func (f *ownInformerFactory) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	close(f.waited)
	select {
	case <-f.synced:
	case <-stop:
	}
	return nil
}

func (f *ownInformerFactory) Shutdown() { close(f.shutDown) }

// An informer factory a controller builds for a clientset of its own is
// run by the manager as the shared ones are: started before the controller
// runs, waited for before the controllers count as synced, and shut down
// when they stop.
func TestControllersOwnInformerFactories(t *testing.T) {
	factory := &ownInformerFactory{started: make(chan struct{}), waited: make(chan struct{}), synced: make(chan struct{}), shutDown: make(chan struct{})}
	startedBeforeRun := make(chan bool, 1)
	d := controller.Descriptor{Name: "own-informers", New: func(_ context.Context, c *controller.Context) (controller.Run, error) {
		c.ExtraInformerFactories = append(c.ExtraInformerFactories, factory)
		return func(ctx context.Context) {
			select {
			case <-factory.started:
				startedBeforeRun <- true
			default:
				startedBeforeRun <- false
			}
			<-ctx.Done()
		}, nil
	}}
	o := NewOptions()
	if err := o.AddControllers(d); err != nil {
		t.Fatal(err)
	}
	o.LeaderElect = false
	o.Controllers = []string{d.Name}
	h := NewHealth(o)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	// Nothing here asks the API server: no shared informer is registered.
	go func() { done <- Run(ctx, o, &rest.Config{Host: "https://127.0.0.1:1"}, h) }()
	if !<-startedBeforeRun {
		t.Error("the controller ran before the manager started its informer factory")
	}
	select {
	case <-factory.waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the manager does not wait for the controller's informer factory to sync")
	}
	// Let time pass to show that Synced does not close while the
	// factory's caches have not synced.
	select {
	case <-h.Synced():
		t.Fatal("synced before the controller's own informers")
	case <-time.After(200 * time.Millisecond):
	}
	close(factory.synced)
	select {
	case <-h.Synced():
	case <-time.After(10 * time.Second):
		t.Fatal("not synced 10s after the controller's informers synced")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-factory.shutDown:
	default:
		t.Error("Run returned without shutting the controller's informer factory down")
	}
}
