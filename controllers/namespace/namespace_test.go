package namespace

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/kubernetes/pkg/controller/namespace/deletion"
)

// fakeDeleter records the namespaces it was asked to empty and answers
// each with err.
type fakeDeleter struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (d *fakeDeleter) Delete(_ context.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, name)
	return d.err
}

func (d *fakeDeleter) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// recordingQueue records how namespaces are queued again or later, and
// queues them at once so that the test can process them.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	mu    sync.Mutex
	added []string
}

func (q *recordingQueue) AddAfter(name string, d time.Duration) {
	q.record("after " + d.String() + ": " + name)
	q.Add(name)
}

func (q *recordingQueue) AddRateLimited(name string) {
	q.record("rate limited: " + name)
	q.Add(name)
}

func (q *recordingQueue) record(s string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.added = append(q.added, s)
}

func (q *recordingQueue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.added = nil
}

func (q *recordingQueue) Added() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.added...)
}

func namespace(name string, deleted bool) *v1.Namespace {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if deleted {
		ns.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		ns.Finalizers = []string{string(v1.FinalizerKubernetes)}
	}
	return ns
}

// start builds a controller on an informer of namespaces, with its queue
// recorded and no workers (the test calls processNext), and returns once
// the informer's first list has reached its handlers.
func start(t *testing.T, deleter *fakeDeleter, gracePeriod time.Duration, namespaces ...*v1.Namespace) (*Controller, *recordingQueue) {
	t.Helper()
	ctx := t.Context()
	client := fake.NewClientset()
	for _, ns := range namespaces {
		if err := client.Tracker().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := NewController(factory.Core().V1().Namespaces(), deleter, gracePeriod, 0)
	if err != nil {
		t.Fatal(err)
	}
	q := &recordingQueue{TypedRateLimitingInterface: c.queue}
	c.queue = q
	// t.Context is done before cleanups run, so the informers have stopped
	// when Shutdown waits for them.
	t.Cleanup(factory.Shutdown)
	t.Cleanup(q.ShutDown)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.handlerSynced) {
		t.Fatal("informer did not sync")
	}
	return c, q
}

func TestDeletionGracePeriod(t *testing.T) {
	tests := []struct {
		name        string
		gracePeriod time.Duration
		namespace   *v1.Namespace
		want        []string
	}{
		{name: "deleted, upstream's grace period", gracePeriod: DefaultDeletionGracePeriod, namespace: namespace("a", true), want: []string{"after 5s: a"}},
		{name: "deleted, no grace period", gracePeriod: 0, namespace: namespace("a", true), want: []string{"after 0s: a"}},
		{name: "deleted, a short grace period", gracePeriod: 200 * time.Millisecond, namespace: namespace("a", true), want: []string{"after 200ms: a"}},
		{name: "not deleted", gracePeriod: 0, namespace: namespace("a", false), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deleter := &fakeDeleter{}
			_, q := start(t, deleter, tt.gracePeriod, tt.namespace)
			if diff := cmp.Diff(tt.want, q.Added()); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{name: "emptied", err: nil, want: nil},
		{name: "content going within 10s: again in 6s", err: &deletion.ResourcesRemainingError{Estimate: 10}, want: []string{"after 6s: a"}},
		{name: "content going, no estimate: again in 1s", err: &deletion.ResourcesRemainingError{Estimate: 0}, want: []string{"after 1s: a"}},
		{name: "failed: again, rate limited", err: errors.New("etcd unavailable"), want: []string{"rate limited: a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deleter := &fakeDeleter{err: tt.err}
			c, q := start(t, deleter, 0, namespace("a", true))
			if q.Len() != 1 {
				t.Fatalf("queue holds %d namespaces, want the deleted one", q.Len())
			}
			q.reset()
			c.processNext(t.Context())
			if diff := cmp.Diff([]string{"a"}, deleter.Calls()); diff != "" {
				t.Errorf("deleter calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, q.Added()); diff != "" {
				t.Errorf("queued again (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamespaceGone checks that a namespace the informer no longer has is
// not handed to the deleter.
func TestNamespaceGone(t *testing.T) {
	deleter := &fakeDeleter{}
	c, q := start(t, deleter, 0)
	q.Add("gone")
	c.processNext(t.Context())
	if got := deleter.Calls(); len(got) != 0 {
		t.Errorf("deleter called for %q, want no call", got)
	}
	if got := q.Len(); got != 0 {
		t.Errorf("queue holds %d namespaces, want 0", got)
	}
}
