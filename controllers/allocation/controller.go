// Package allocation runs the NetworkClaim registry: it allocates each
// claimed prefix that overlaps no prefix allocated to another claim, marks
// the others Unavailable naming their holder, and promotes waiting records
// first come, first served when space is freed.
//
// Decisions are made in one place, a ledger in memory, in the order the
// informer delivers claims (the order of etcd), and only then written to
// each claim's status by a few workers: deciding never waits for the API,
// and two records can never both be allocated the same space. Status is the
// source of truth: at start (and at every new leadership term) the ledger is
// rebuilt from it, from a consistent read.
package allocation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientscheme "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/scheme"
	"sigs.k8s.io/sample-generic-controlplane/client/informers/externalversions"
	listers "sigs.k8s.io/sample-generic-controlplane/client/listers/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers.
	Name = "networkclaim-allocation"
	// Identity is the controller's service account in kube-system, and the
	// event source and field manager of its status writes.
	Identity = "networkclaim-allocation-controller"
	// workers write status; decisions do not wait for them.
	workers = 4
)

// Event reasons, one per kind of decision.
const (
	EventAllocated   = "Allocated"
	EventUnavailable = "Unavailable"
	EventReleased    = "Released"
)

// Descriptor registers the controller with a manager. The plug-in that
// serves NetworkClaims adds its feature gate.
func Descriptor() controller.Descriptor {
	group := networkingv1alpha1.GroupName
	return controller.Descriptor{
		Name:           Name,
		ServiceAccount: Identity,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{group}, Resources: []string{"networkclaims"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{group}, Resources: []string{"networkclaims/status"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
		},
		New: func(ctx context.Context, c *controller.Context) (controller.Run, error) {
			return New(ctx, c)
		},
	}
}

// New builds the controller.
func New(ctx context.Context, c *controller.Context) (func(context.Context), error) {
	config, err := c.ClientBuilder.Config(Identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	eventClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	// NetworkClaims have no protobuf encoding.
	config = rest.CopyConfig(config)
	config.ContentType, config.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return NewController(ctx, client, eventClient, c.ReplicaIdentity).Run, nil
}

// Controller allocates NetworkClaim records.
type Controller struct {
	client      versioned.Interface
	informers   externalversions.SharedInformerFactory
	lister      listers.NetworkClaimLister
	synced      cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	eventClient kubernetes.Interface

	// mu guards the ledger and the stored index; restored turns on once
	// the ledger was rebuilt from status, and until then events are left
	// to the rebuild.
	mu       sync.Mutex
	ledger   *ledger
	restored bool
	// stored indexes the allocations that claims' status, as the informer
	// last delivered it, records (in spec or not): a new allocation is
	// written only once no other claim's status shows an overlapping one,
	// so that stored statuses never overlap, not even between a release
	// and the write that records it.
	stored   prefixindex.Index[string]
	storedBy map[string][]netip.Prefix
}

// errWaitingForRelease: a decision must wait for another claim's status to
// stop showing an overlapping allocation.
var errWaitingForRelease = errors.New("waiting for a released prefix to leave another claim's status")

// NewController wires the controller; Run starts it. ctx carries the
// logger of the informer's event handlers; replica names this replica in
// the events it records.
func NewController(ctx context.Context, client versioned.Interface, eventClient kubernetes.Interface, replica string) *Controller {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("controller", Name))
	registerMetrics()
	// The first list is a consistent read, not whatever the watch cache of
	// this API server holds: a new leader must see every allocation the
	// previous one stored before it decides anything.
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
			if o.ResourceVersion == "0" {
				o.ResourceVersion = ""
			}
		}),
		externalversions.WithTransform(controller.TrimManagedFields))
	informer := factory.Networking().V1alpha1().NetworkClaims()
	broadcaster := record.NewBroadcaster()
	c := &Controller{
		client:      client,
		informers:   factory,
		lister:      informer.Lister(),
		queue:       workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: Name}),
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(clientscheme.Scheme, corev1.EventSource{Component: Identity, Host: replica}),
		eventClient: eventClient,
		ledger:      newLedger(time.Now),
		storedBy:    map[string][]netip.Prefix{},
	}
	registration, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.observe(ctx, obj) },
		DeleteFunc: func(obj any) { c.deleted(ctx, obj) },
	})
	utilruntime.Must(err) // fails only on an informer that has stopped
	// Synced once the handler, not only the cache, has seen every claim of
	// the first list: the stored index must be complete before anything
	// is written.
	c.synced = registration.HasSynced
	return c
}

// Run allocates until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	ctx = klog.NewContext(ctx, logger)

	c.broadcaster.StartStructuredLogging(3)
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.eventClient.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()
	defer c.queue.ShutDown()
	// A replica that stops leading must not report the leader's ledger:
	// reset once the informer, and so its handlers, stopped.
	defer recordsMetric.Reset()
	c.informers.Start(ctx.Done())
	defer c.informers.Shutdown()

	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), c.synced) {
		return
	}
	c.restore(ctx)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// restore rebuilds the ledger from the claims' status, decides what is
// undecided, and queues every claim so that its status shows the ledger.
func (c *Controller) restore(ctx context.Context) {
	start := time.Now()
	c.mu.Lock()
	claims, err := c.lister.List(labels.Everything())
	utilruntime.Must(err) // a cache lister does not fail
	specs := make([]claimSpec, 0, len(claims))
	for _, claim := range claims {
		s := specOf(ctx, claim)
		s.recorded = recordedOf(claim)
		specs = append(specs, s)
	}
	changes := c.ledger.restore(specs)
	c.restored = true
	allocated, waiting := c.ledger.counts()
	c.mu.Unlock()

	klog.FromContext(ctx).V(2).Info("Rebuilt the ledger from status", "claims", len(claims), "allocated", allocated, "waiting", waiting, "newDecisions", len(changes), "duration", time.Since(start))
	c.report(ctx, changes, nil)
	setRecordCounts(allocated, waiting)
	for _, claim := range claims {
		c.queue.Add(claim.Name)
	}
}

// observe decides a claim's new or changed records in the informer's
// goroutine, so in the order etcd stored them.
func (c *Controller) observe(ctx context.Context, obj any) {
	claim, ok := obj.(*networkingv1alpha1.NetworkClaim)
	if !ok {
		return
	}
	c.recordStored(claim.Name, storedAllocations(claim))
	// An event older than the cache (one queued before the restore, say,
	// for a claim since deleted or created again) is left alone: the
	// events that follow it bring the ledger to the cache's state.
	if current, err := c.lister.Get(claim.Name); err != nil || current.UID != claim.UID {
		return
	}
	if c.decide(ctx, nil, func(l *ledger) []change { return l.sync(specOf(ctx, claim)) }) {
		// Always: status may need writing even when the ledger did not
		// change (e.g. someone else wrote it).
		c.queue.Add(claim.Name)
	}
}

// deleted releases a deleted claim's prefixes.
func (c *Controller) deleted(ctx context.Context, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	claim, ok := obj.(*networkingv1alpha1.NetworkClaim)
	if !ok {
		return
	}
	c.recordStored(claim.Name, nil)
	c.decide(ctx, claim, func(l *ledger) []change { return l.forget(claim.Name, claim.UID) })
}

// recordStored updates the stored index with what a claim's status now
// records, and queues the claims the ledger allocated a prefix that
// overlaps one the status no longer shows: their writes waited for it.
func (c *Controller) recordStored(name string, now []netip.Prefix) {
	c.mu.Lock()
	var wake []string
	for _, p := range c.storedBy[name] {
		c.stored.Delete(p, name)
		if slices.Contains(now, p) {
			continue
		}
		for _, holder := range c.ledger.held.Overlapping(p) {
			if holder != name {
				wake = append(wake, holder)
			}
		}
	}
	for _, p := range now {
		c.stored.Insert(p, name)
	}
	if len(now) == 0 {
		delete(c.storedBy, name)
	} else {
		c.storedBy[name] = now
	}
	c.mu.Unlock()
	for _, holder := range wake {
		c.queue.Add(holder)
	}
}

// fenced reports whether writing status would record an allocation that
// another claim's stored status still shows an overlapping allocation of:
// then the write waits for that claim's release to be stored. c.mu must be
// held.
func (c *Controller) fenced(claim *networkingv1alpha1.NetworkClaim, status networkingv1alpha1.NetworkClaimStatus) bool {
	already := map[string]bool{}
	for _, r := range claim.Status.AddressSpace {
		already[r.Prefix] = r.Status == networkingv1alpha1.AllocationAllocated
	}
	for _, r := range status.AddressSpace {
		if r.Status != networkingv1alpha1.AllocationAllocated || already[r.Prefix] {
			continue
		}
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			continue
		}
		for _, holder := range c.stored.Overlapping(p) {
			if holder != claim.Name {
				return true
			}
		}
	}
	return false
}

// storedAllocations are the prefixes a claim's status records as
// allocated, whether still in spec or not.
func storedAllocations(claim *networkingv1alpha1.NetworkClaim) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range claim.Status.AddressSpace {
		if r.Status != networkingv1alpha1.AllocationAllocated {
			continue
		}
		if p, err := netip.ParsePrefix(r.Prefix); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// decide changes the ledger under its lock, then reports the changes. It
// does nothing, and returns false, until the ledger is restored: the
// restore reads the informer's cache, which already holds what the event
// is about.
func (c *Controller) decide(ctx context.Context, deleted *networkingv1alpha1.NetworkClaim, change func(*ledger) []change) bool {
	c.mu.Lock()
	if !c.restored {
		c.mu.Unlock()
		return false
	}
	changes := change(c.ledger)
	allocated, waiting := c.ledger.counts()
	c.mu.Unlock()

	c.report(ctx, changes, deleted)
	setRecordCounts(allocated, waiting)
	return true
}

// report logs each decision, records its event and counts conflicts, and
// queues the claims whose status must change. deleted, if not nil, is a
// claim gone from the cache that some changes are about.
func (c *Controller) report(ctx context.Context, changes []change, deleted *networkingv1alpha1.NetworkClaim) {
	logger := klog.FromContext(ctx)
	for _, ch := range changes {
		if ch.kind == changeUnavailable || ch.kind == changeBlocker {
			logger.V(2).Info("Record unavailable", "claim", ch.claim, "prefix", ch.prefix, "holder", ch.holder, "holderPrefix", ch.holderPrefix)
		} else {
			logger.V(2).Info("Record "+strings.ToLower(string(ch.kind)), "claim", ch.claim, "prefix", ch.prefix)
		}
		var claim *networkingv1alpha1.NetworkClaim
		if deleted != nil && ch.claim == deleted.Name {
			claim = deleted
		} else {
			c.queue.Add(ch.claim)
			claim, _ = c.lister.Get(ch.claim)
		}
		switch ch.kind {
		case changeUnavailable:
			conflictsTotal.Inc()
		case changeBlocker:
			continue // only the message changes
		}
		if claim == nil {
			continue
		}
		switch ch.kind {
		case changeAllocated:
			c.recorder.Eventf(claim, corev1.EventTypeNormal, EventAllocated, "Allocated %s", ch.prefix)
		case changeUnavailable:
			c.recorder.Eventf(claim, corev1.EventTypeWarning, EventUnavailable, "%s is unavailable: %s", ch.prefix, unavailableMessage(ch.holderPrefix, ch.holder))
		case changeReleased:
			c.recorder.Eventf(claim, corev1.EventTypeNormal, EventReleased, "Released %s", ch.prefix)
		}
	}
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
	if err := c.writeStatus(ctx, name); err != nil {
		if !apierrors.IsConflict(err) && !errors.Is(err, errWaitingForRelease) {
			utilruntime.HandleErrorWithContext(ctx, err, "Writing NetworkClaim status failed; will retry", "claim", name)
		}
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// writeStatus makes a claim's status show the ledger's decisions.
func (c *Controller) writeStatus(ctx context.Context, name string) error {
	claim, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	generation, decisions, known := c.ledger.records(name, claim.UID)
	if !known || generation != claim.Generation {
		c.mu.Unlock()
		// The informer has a spec the ledger has not decided yet; its
		// handler will queue the claim again once it has.
		return nil
	}
	status := desiredStatus(claim, generation, decisions)
	fenced := c.fenced(claim, status)
	c.mu.Unlock()
	if fenced {
		// The release's event queues the claim again; the rate-limited
		// retry is the safety net.
		return errWaitingForRelease
	}
	if !apiequality.Semantic.DeepEqual(claim.Status, status) {
		update := claim.DeepCopy()
		update.Status = status
		if _, err := c.client.NetworkingV1alpha1().NetworkClaims().UpdateStatus(ctx, update, metav1.UpdateOptions{FieldManager: Identity}); err != nil {
			return fmt.Errorf("NetworkClaim %s: %w", name, err)
		}
	}
	c.mu.Lock()
	observed := c.ledger.recorded(name, generation)
	c.mu.Unlock()
	for _, t := range observed {
		decisionLatency.Observe(time.Since(t).Seconds())
	}
	return nil
}

// specOf is what the ledger needs of a claim's spec.
func specOf(ctx context.Context, claim *networkingv1alpha1.NetworkClaim) claimSpec {
	s := claimSpec{name: claim.Name, uid: claim.UID, created: claim.CreationTimestamp.Time, generation: claim.Generation}
	for _, r := range claim.Spec.AddressSpace {
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			// Validation admits only canonical prefixes; a stored one that
			// does not parse is left undecided rather than guessed at.
			klog.FromContext(ctx).Error(err, "Ignoring a record whose prefix does not parse", "claim", claim.Name, "prefix", r.Prefix)
			continue
		}
		s.prefixes = append(s.prefixes, p)
	}
	return s
}

// recordedOf is the decisions a claim's status records for the prefixes
// still in its spec.
func recordedOf(claim *networkingv1alpha1.NetworkClaim) map[netip.Prefix]recordedStatus {
	out := map[netip.Prefix]recordedStatus{}
	for _, r := range claim.Status.AddressSpace {
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			continue
		}
		recorded := recordedStatus{allocated: r.Status == networkingv1alpha1.AllocationAllocated, date: r.Date.Time}
		if !recorded.allocated {
			recorded.holderPrefix, recorded.holder, _ = parseUnavailableMessage(r.Message)
		}
		out[p] = recorded
	}
	return out
}
