//go:build robustness

package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
)

const (
	// namespace holds the key space of the object traffic.
	namespace = "robustness"
	// keys is the size of the key space: small, so that conflicts are
	// frequent.
	keys = 5
	// requestTimeout bounds one request; past it the outcome is unknown.
	requestTimeout = 5 * time.Second
)

// recorder keeps the history, on one clock.
type recorder struct {
	start   time.Time
	mu      sync.Mutex
	ops     []Op
	watches []Watch
	claims  []ClaimEvent
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// outcome classifies what a request's error says of its effect.
func outcome(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case apierrors.IsAlreadyExists(err):
		return AlreadyExists
	case apierrors.IsConflict(err):
		return Conflict
	case apierrors.IsNotFound(err):
		return NotFound
	case apierrors.IsTooManyRequests(err), apierrors.IsBadRequest(err), apierrors.IsInvalid(err), apierrors.IsForbidden(err), utilnet.IsConnectionRefused(err):
		// Refused before it was done.
		return Failed
	default:
		// A timeout, a reset, a 5xx: it may or may not have been done.
		return Unknown
	}
}

func objectOf(cm *corev1.ConfigMap) Object {
	return Object{Name: cm.Name, ResourceVersion: cm.ResourceVersion, Value: cm.Data["v"]}
}

// objectClient writes and reads the key space through one server.
type objectClient struct {
	id int
	// pick returns a client of a server that runs, the client's own
	// while it does.
	pick func() kubernetes.Interface
	rec  *recorder
	rand *rand.Rand
	// known are the resourceVersions this client last saw, by name.
	known map[string]string
	seq   int
	// lastList is the resourceVersion of the client's last list.
	lastList string
}

func (c *objectClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		name := fmt.Sprintf("k%d", c.rand.IntN(keys))
		switch n := c.rand.IntN(100); {
		case n < 20:
			c.create(ctx, name)
		case n < 45:
			c.update(ctx, name)
		case n < 55:
			c.delete(ctx, name)
		case n < 80:
			c.get(ctx, name)
		case n < 92:
			c.list(ctx, "")
		default:
			if c.lastList != "" {
				c.list(ctx, c.lastList)
			}
		}
	}
}

func (c *objectClient) value() string {
	c.seq++
	return fmt.Sprintf("c%d-%d", c.id, c.seq)
}

func (c *objectClient) record(op Op, call int64, err error, result *corev1.ConfigMap) {
	op.Client, op.Call, op.Return, op.Outcome = c.id, call, c.rec.now(), outcome(err)
	if op.Outcome == Failed || op.Outcome == Unknown {
		// The server is down or busy: do not spin.
		time.Sleep(50 * time.Millisecond)
	}
	if err == nil && result != nil {
		o := objectOf(result)
		op.Result = &o
		c.known[op.Name] = o.ResourceVersion
	}
	if op.Outcome == NotFound {
		delete(c.known, op.Name)
	}
	c.rec.add(op)
}

func (c *objectClient) create(ctx context.Context, name string) {
	v := c.value()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := c.rec.now()
	cm, err := c.pick().CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": v}}, metav1.CreateOptions{})
	c.record(Op{Kind: Create, Name: name, Value: v}, call, err, cm)
}

func (c *objectClient) update(ctx context.Context, name string) {
	rv, ok := c.known[name]
	if !ok {
		c.get(ctx, name)
		return
	}
	v := c.value()
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := c.rec.now()
	cm, err := c.pick().CoreV1().ConfigMaps(namespace).Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}, Data: map[string]string{"v": v}}, metav1.UpdateOptions{})
	c.record(Op{Kind: Update, Name: name, Value: v, Precondition: rv}, call, err, cm)
}

func (c *objectClient) delete(ctx context.Context, name string) {
	rv, ok := c.known[name]
	if !ok {
		c.get(ctx, name)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := c.rec.now()
	err := c.pick().CoreV1().ConfigMaps(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	c.record(Op{Kind: Delete, Name: name, Precondition: rv}, call, err, nil)
	if err == nil {
		delete(c.known, name)
	}
}

func (c *objectClient) get(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := c.rec.now()
	cm, err := c.pick().CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	c.record(Op{Kind: Get, Name: name}, call, err, cm)
}

// list reads the key space, two objects a page: at rv (Exact), or a
// consistent list when rv is empty.
func (c *objectClient) list(ctx context.Context, rv string) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	call := c.rec.now()
	op := Op{Kind: List, ListAt: rv}
	opts := metav1.ListOptions{Limit: 2}
	if rv != "" {
		opts.ResourceVersion, opts.ResourceVersionMatch = rv, metav1.ResourceVersionMatchExact
	}
	var err error
	for {
		var page *corev1.ConfigMapList
		page, err = c.pick().CoreV1().ConfigMaps(namespace).List(ctx, opts)
		if err != nil {
			break
		}
		if op.ListRV == "" {
			op.ListRV = page.ResourceVersion
		}
		for i := range page.Items {
			if page.Items[i].Data["v"] != "" {
				op.Items = append(op.Items, objectOf(&page.Items[i]))
			}
		}
		if page.Continue == "" {
			break
		}
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = page.Continue, "", ""
	}
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		// Compacted meanwhile: nothing was read.
		err = apierrors.NewTooManyRequests("compacted", 0)
	}
	op.Client, op.Call, op.Return, op.Outcome = c.id, call, c.rec.now(), outcome(err)
	if op.Outcome != OK {
		op.Items, op.ListRV = nil, ""
		time.Sleep(50 * time.Millisecond)
	} else {
		c.lastList = op.ListRV
	}
	c.rec.add(op)
}

// watcher watches the key space through one server from a resourceVersion,
// with bookmarks, and starts again from the last one it saw when the watch
// ends; after 410 Gone it lists again and watches from the list.
type watcher struct {
	id   int
	pick func() kubernetes.Interface
	rec  *recorder
}

func (w *watcher) run(ctx context.Context, from string) {
	for ctx.Err() == nil {
		rec := Watch{Client: w.id, From: from}
		wi, err := w.pick().CoreV1().ConfigMaps(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(30))})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rec.Gone = true
				w.rec.mu.Lock()
				w.rec.watches = append(w.rec.watches, rec)
				w.rec.mu.Unlock()
				from = w.relist(ctx)
				continue
			}
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for e := range wi.ResultChan() {
			if e.Type == watch.Error {
				if status := apierrors.FromObject(e.Object); apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
					rec.Gone = true
				}
				break
			}
			cm, ok := e.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			from = cm.ResourceVersion
			o := objectOf(cm)
			if e.Type != watch.Bookmark && o.Value == "" {
				// Not the traffic's (kube-root-ca.crt): left out of the
				// key space, as the lists leave it out.
				continue
			}
			rec.Events = append(rec.Events, Event{Type: EventType(e.Type), Object: o})
		}
		wi.Stop()
		w.rec.mu.Lock()
		w.rec.watches = append(w.rec.watches, rec)
		w.rec.mu.Unlock()
		if rec.Gone {
			from = w.relist(ctx)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// relist lists again after 410 Gone, and returns the list's revision.
func (w *watcher) relist(ctx context.Context) string {
	for ctx.Err() == nil {
		list, err := w.pick().CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			return list.ResourceVersion
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return ""
}

// claimWatcher records every NetworkClaim event, from the first list on,
// starting again from the last one it saw. After 410 Gone it lists the
// claims again and records them after a Reset: what was deleted meanwhile
// is not in the list.
func claimWatcher(ctx context.Context, pick func() versioned.Interface, rec *recorder, from string) {
	for ctx.Err() == nil {
		wi, err := pick().NetworkingV1alpha1().NetworkClaims().Watch(ctx, metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(30))})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				from = relistClaims(ctx, pick, rec)
			}
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		gone := false
		for e := range wi.ResultChan() {
			if e.Type == watch.Error {
				status := apierrors.FromObject(e.Object)
				gone = apierrors.IsResourceExpired(status) || apierrors.IsGone(status)
				break
			}
			c, ok := e.Object.(*networkingv1alpha1.NetworkClaim)
			if !ok {
				break
			}
			from = c.ResourceVersion
			if e.Type == watch.Bookmark {
				continue
			}
			rec.mu.Lock()
			rec.claims = append(rec.claims, ClaimEvent{Type: EventType(e.Type), Claim: *c})
			rec.mu.Unlock()
		}
		wi.Stop()
		if gone {
			from = relistClaims(ctx, pick, rec)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// relistClaims lists the claims after 410 Gone and records them after a
// Reset; it returns the list's revision.
func relistClaims(ctx context.Context, pick func() versioned.Interface, rec *recorder) string {
	for ctx.Err() == nil {
		list, err := pick().NetworkingV1alpha1().NetworkClaims().List(ctx, metav1.ListOptions{})
		if err == nil {
			rec.mu.Lock()
			rec.claims = append(rec.claims, ClaimEvent{Type: Reset})
			for _, c := range list.Items {
				rec.claims = append(rec.claims, ClaimEvent{Type: Added, Claim: c})
			}
			rec.mu.Unlock()
			return list.ResourceVersion
		}
		sleep(ctx, 200*time.Millisecond)
	}
	return ""
}

// claimClient creates and releases NetworkClaims: exact prefixes from a
// small set, so that claims conflict and wait for each other, and prefixes
// from a shared pool.
func claimClient(ctx context.Context, id int, pick func() versioned.Interface, r *rand.Rand) {
	for i := 0; ctx.Err() == nil; i++ {
		claims := pick().NetworkingV1alpha1().NetworkClaims()
		name := fmt.Sprintf("c%d-%d", id, r.IntN(6))
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		if r.IntN(3) == 0 {
			claims.Delete(rctx, name, metav1.DeleteOptions{}) //nolint:errcheck // released, or absent
		} else {
			record := networkingv1alpha1.AddressSpaceRecord{Name: "r", Prefix: fmt.Sprintf("10.200.%d.0/24", r.IntN(4))}
			if r.IntN(2) == 0 {
				record = networkingv1alpha1.AddressSpaceRecord{Name: "r", From: &networkingv1alpha1.PrefixSource{Claim: "robustness-pool"}, PrefixLength: ptr(int32(26))}
			}
			claims.Create(rctx, &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, //nolint:errcheck // exists, or refused: the registry decides
				Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{record}}}, metav1.CreateOptions{})
		}
		cancel()
		sleep(ctx, time.Duration(50+r.IntN(100))*time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
