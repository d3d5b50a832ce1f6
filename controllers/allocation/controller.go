// Package allocation runs the NetworkClaim registry: it allocates each
// claimed prefix that overlaps no prefix allocated to another claim outside
// its delegation chain, fills records taken from pools first fit, marks the
// others Unavailable saying why in status fields, and promotes waiting
// records first come, first served when space is freed.
//
// Decisions are made in one place, a ledger in memory, by one decider in
// the order the informer delivers claims (the order of etcd), and only
// then written to each claim's status by a few workers: deciding never
// waits for the API, and two records can never both be allocated the same
// space. Status is the source of truth: at start (and at every new
// leadership term) the ledger is rebuilt from it, from a consistent read.
package allocation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	eventrecord "k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientscheme "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/scheme"
	"sigs.k8s.io/sample-generic-controlplane/client/informers/externalversions"
	networkinginformers "sigs.k8s.io/sample-generic-controlplane/client/informers/externalversions/networking/v1alpha1"
	listers "sigs.k8s.io/sample-generic-controlplane/client/listers/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
)

const (
	// Name selects the controller in --controllers; it ends in
	// -controller, as kube-controller-manager's names do.
	Name = "networkclaim-allocation-controller"
	// ShortName is the controller's first name: --controllers accepts it
	// as an alias, and it names the controller's health check
	// (/livez/controller-networkclaim-allocation), work queues and log
	// lines, which users watch.
	ShortName = "networkclaim-allocation"
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
	// EventPoolNearlyFull: a pool crossed 80% or 95% used, upwards.
	EventPoolNearlyFull = "PoolNearlyFull"
	// EventPoolUtilizationNormal: a pool fell below 80% used.
	EventPoolUtilizationNormal = "PoolUtilizationNormal"
)

// poolStatusDelay batches the status writes that only a pool's
// utilization asks for: a claim whose pool changes many times a second is
// written at most once a second, and the writes that decisions need do
// not queue behind them.
const poolStatusDelay = time.Second

// Descriptor registers the controller with a manager. The plug-in that
// serves NetworkClaims adds its feature gate.
func Descriptor() controller.Descriptor {
	group := networkingv1alpha1.GroupName
	return controller.Descriptor{
		Name:           Name,
		Aliases:        []string{ShortName},
		ReportedName:   ShortName,
		ServiceAccount: Identity,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{group}, Resources: []string{"networkclaims"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{group}, Resources: []string{"networkclaims/status"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
		},
		New: New,
	}
}

// New builds the controller for a manager: its clients act as Identity,
// and its informer factory, of our own clientset, is handed to the manager,
// which starts it with the shared ones.
func New(ctx context.Context, c *controller.Context) (controller.Run, error) {
	config, err := c.ClientBuilder.Config(Identity)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ShortName, err)
	}
	eventClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ShortName, err)
	}
	// NetworkClaims are encoded as the manager's clients ask (protobuf,
	// as kube-controller-manager's do), and the clientset prefers protobuf
	// when the configuration says nothing.
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ShortName, err)
	}
	informers := newInformerFactory(client)
	allocator := NewController(ctx, informers.Networking().V1alpha1().NetworkClaims(), client, eventClient, c.ReplicaIdentity)
	c.ExtraInformerFactories = append(c.ExtraInformerFactories, sharedInformers{informers})
	return allocator.Run, nil
}

// sharedInformers offers the controller's informer of NetworkClaims to the
// other controllers of the manager that ask for the resource (the garbage
// collector), so that the claims are listed and decoded once, not a
// second time for their metadata. It offers no other: the factory could
// make informers of every resource of the clientset (ServiceLocations
// too), but they would list as this controller, which may not.
type sharedInformers struct {
	externalversions.SharedInformerFactory
}

var _ controller.ResourceInformerFactory = sharedInformers{}

// networkClaims is the resource whose informer the controller shares.
var networkClaims = networkingv1alpha1.SchemeGroupVersion.WithResource("networkclaims")

func (f sharedInformers) ForResource(resource schema.GroupVersionResource) (informers.GenericInformer, error) {
	if resource != networkClaims {
		return nil, fmt.Errorf("%s shares no informer of %s", ShortName, resource)
	}
	return f.SharedInformerFactory.ForResource(resource)
}

// newInformerFactory returns the factory of the controller's informer.
// Its first list is a consistent read, not whatever the watch cache of
// this API server holds: a new leader must see every allocation the
// previous one stored before it decides anything.
func newInformerFactory(client versioned.Interface) externalversions.SharedInformerFactory {
	return externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
			if o.ResourceVersion == "0" {
				o.ResourceVersion = ""
			}
		}),
		externalversions.WithTransform(controller.TrimManagedFields))
}

// Controller allocates NetworkClaim records. Its frame is that of
// upstream's controllers, such as the ServiceCIDR controller
// (k8s.io/kubernetes/pkg/controller/servicecidrs), which watches prefixes
// too: informer handlers that only queue names, rate-limited work queues,
// workers that read each object from the lister, events from a
// broadcaster, a Ready condition in status. Its core is not: that
// controller guards ServiceCIDR deletions (the API server's allocator hands
// out the addresses) and works out each sync from the listers alone, while
// this one allocates. So one decider takes the queued names in the order
// they came (the order etcd stored the claims) and makes every decision in
// an in-memory ledger, rebuilt from status at each start; a few workers
// then write the decisions to status, each write waiting on the ledger's
// fence, with optimistic concurrency rather than server-side apply, and
// retried for as long as it fails rather than dropped after some retries.
type Controller struct {
	client      versioned.Interface
	lister      listers.NetworkClaimLister
	synced      cache.InformerSynced
	broadcaster eventrecord.EventBroadcaster
	recorder    eventrecord.EventRecorder
	eventClient kubernetes.Interface

	// decisions holds the claims whose spec or status the informer
	// delivered, for the decider; statuses the claims whose status must
	// show the ledger's decisions, for the workers; checks the claims
	// whose status a rebuild of the ledger did not change and that are
	// checked all the same, for the checker, which queues those found
	// behind on statuses. A restart queues every claim on checks, so that
	// the status writes of new decisions never wait behind them.
	decisions workqueue.TypedRateLimitingInterface[string]
	statuses  workqueue.TypedRateLimitingInterface[string]
	checks    workqueue.TypedInterface[string]

	// mu guards the ledger, and with it the write fence, and seen between
	// the decider, the status workers and the checker.
	mu     sync.Mutex
	ledger *ledger
	// seen is, by claim name, the resourceVersion of the claim the ledger
	// and its write fence were last brought up to date with, and whose
	// status was queued for a write or a check: deciding that same
	// object again changes nothing and checks nothing new. So the
	// informer's first delivery of every claim, which the rebuild read
	// already, costs the decider a lookup each.
	seen map[string]string
}

// errWaitingForRelease: a decision must wait for another claim's status to
// stop showing an overlapping allocation.
var errWaitingForRelease = errors.New("waiting for a released prefix to leave another claim's status")

// NewController wires the controller to the claims' informer, whose
// factory the caller starts; Run runs it. replica names this replica in the
// events it records.
func NewController(ctx context.Context, informer networkinginformers.NetworkClaimInformer, client versioned.Interface, eventClient kubernetes.Interface, replica string) *Controller {
	registerMetrics()
	broadcaster := eventrecord.NewBroadcaster()
	c := &Controller{
		client:      client,
		lister:      informer.Lister(),
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(clientscheme.Scheme, corev1.EventSource{Component: Identity, Host: replica}),
		eventClient: eventClient,
		decisions: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ShortName + "-decisions"}),
		statuses: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ShortName + "-statuses"}),
		checks: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: ShortName + "-checks"}),
		ledger: newLedger(time.Now),
		seen:   map[string]string{},
	}
	registration, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	utilruntime.Must(err) // fails only on an informer that has stopped
	c.synced = registration.HasSynced
	return c
}

// enqueue queues a claim for the decider.
func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.decisions.Add(key)
}

// Run allocates until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", ShortName)
	ctx = klog.NewContext(ctx, logger)

	c.broadcaster.StartStructuredLogging(3)
	c.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.eventClient.CoreV1().Events("")})
	defer c.broadcaster.Shutdown()
	defer c.decisions.ShutDown()
	defer c.statuses.ShutDown()
	defer c.checks.ShutDown()
	// A replica that stops leading must not report the leader's ledger.
	defer recordsMetric.Reset()
	defer resetPoolMetrics()

	if !cache.WaitForNamedCacheSync(ShortName, ctx.Done(), c.synced) {
		return
	}
	unchecked := c.restore(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, c.decider, time.Second) })
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.statusWorker, time.Second) })
	}
	wg.Go(func() {
		// Queued here rather than in restore, so that the decider and the
		// workers need not wait for 100,000 adds.
		c.queueChecks(unchecked)
		wait.UntilWithContext(ctx, c.checker, time.Second)
	})
	<-ctx.Done()
	c.decisions.ShutDown()
	c.statuses.ShutDown()
	c.checks.ShutDown()
	wg.Wait()
}

// restore rebuilds the ledger from the claims' status and the write fence
// from what they store, and decides what is undecided. The claims whose
// decisions it changed are queued for their status writes; it returns the
// names of all, for checks of their status (queueChecks) behind any write
// (see checker).
func (c *Controller) restore(ctx context.Context) []string {
	start := time.Now()
	claims, err := c.lister.List(labels.Everything())
	utilruntime.Must(err) // a cache lister does not fail
	specs := make([]claimSpec, 0, len(claims))
	names := make([]string, 0, len(claims))
	c.mu.Lock()
	if len(c.seen) == 0 {
		c.seen = make(map[string]string, len(claims))
	}
	for _, claim := range claims {
		s := specOf(ctx, claim)
		s.recorded = recordedOf(claim, s.records)
		specs = append(specs, s)
		c.ledger.recordStored(claim.Name, storedAllocations(claim))
		c.seen[claim.Name] = claim.ResourceVersion
		names = append(names, claim.Name)
	}
	changes := c.ledger.restore(specs)
	changes = append(changes, c.ledger.expire()...)
	allocated, waiting := c.ledger.counts()
	c.ledger.takeChangedPools() // every claim is checked below
	c.scheduleExpiry()
	c.mu.Unlock()

	klog.FromContext(ctx).V(2).Info("Rebuilt the ledger from status", "claims", len(claims), "allocated", allocated, "waiting", waiting, "newDecisions", len(changes), "duration", time.Since(start))
	c.report(ctx, changes, nil)
	setRecordCounts(allocated, waiting)
	return names
}

// queueChecks queues the claims for checks of their status.
func (c *Controller) queueChecks(names []string) {
	for _, name := range names {
		c.checks.Add(name)
	}
}

func (c *Controller) decider(ctx context.Context) {
	for c.decideNext(ctx) {
	}
}

func (c *Controller) decideNext(ctx context.Context) bool {
	name, quit := c.decisions.Get()
	if quit {
		return false
	}
	defer c.decisions.Done(name)
	c.decide(ctx, name)
	return true
}

// decide brings the ledger and its write fence up to date with a claim as
// the informer's cache holds it: a new or changed spec is decided, a
// deleted claim released. It cannot fail: the cache is the input and the
// ledger is memory.
func (c *Controller) decide(ctx context.Context, name string) {
	claim, err := c.lister.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		utilruntime.HandleErrorWithContext(ctx, err, "Reading a NetworkClaim from the cache failed", "claim", name)
		return
	}
	var deleted *networkingv1alpha1.NetworkClaim
	c.mu.Lock()
	// Grace periods that ended free space first.
	changes := c.ledger.expire()
	// This very object was decided, and its status queued, already (by
	// the rebuild, most often): only the grace periods are looked at.
	seen := claim != nil && c.seen[name] == claim.ResourceVersion
	var wake []string
	switch {
	case claim == nil:
		delete(c.seen, name)
		wake = c.ledger.recordStored(name, nil)
		if uid, ok := c.ledger.uidOf(name); ok {
			// Enough of the object for the events of its release.
			deleted = &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
		}
		changes = append(changes, c.ledger.forget(name, "")...)
	case !seen:
		wake = c.ledger.recordStored(name, storedAllocations(claim))
		changes = append(changes, c.ledger.sync(specOf(ctx, claim))...)
		c.seen[name] = claim.ResourceVersion
	}
	allocated, waiting := c.ledger.counts()
	changedPools := c.ledger.takeChangedPools()
	c.scheduleExpiry()
	c.mu.Unlock()

	for _, holder := range changedPools {
		c.statuses.AddAfter(holder, poolStatusDelay)
	}

	c.report(ctx, changes, deleted)
	setRecordCounts(allocated, waiting)
	for _, holder := range wake {
		c.statuses.Add(holder)
	}
	if claim != nil && !seen {
		// Always: status may need writing even when the ledger did not
		// change (e.g. someone else wrote it).
		c.statuses.Add(name)
	}
}

// report logs each decision, records its event and counts conflicts, and
// queues the claims whose status must change. deleted, if not nil, is the
// claim gone from the cache that some changes are about.
func (c *Controller) report(ctx context.Context, changes []change, deleted *networkingv1alpha1.NetworkClaim) {
	logger := klog.FromContext(ctx)
	for _, ch := range changes {
		if ch.kind == changeUnavailable || ch.kind == changeBlocker {
			logger.V(2).Info("Record unavailable", "claim", ch.claim, "record", recordName(ch.key), "reason", ch.reason, "message", unavailableMessage(ch.reason, ch.prefix, ch.length, ch.holder, ch.detail))
		} else {
			logger.V(2).Info("Record "+strings.ToLower(string(ch.kind)), "claim", ch.claim, "record", recordName(ch.key), "prefix", ch.prefix)
		}
		var claim *networkingv1alpha1.NetworkClaim
		if deleted != nil && ch.claim == deleted.Name {
			claim = deleted
		} else {
			c.statuses.Add(ch.claim)
			claim, _ = c.lister.Get(ch.claim)
		}
		switch {
		case ch.kind == changeBlocker:
			continue // only the message changes
		case ch.kind == changeUnavailable && ch.reason == networkingv1alpha1.ReasonConflict:
			conflictsTotal.Inc()
		case ch.kind == changeUnavailable && ch.reason == networkingv1alpha1.ReasonPoolExhausted:
			poolExhaustedTotal.Inc()
		}
		if claim == nil {
			continue
		}
		switch ch.kind {
		case changeAllocated:
			c.recorder.Eventf(claim, corev1.EventTypeNormal, EventAllocated, "Allocated %s", describe(ch.key, ch.prefix))
		case changeUnavailable:
			c.recorder.Eventf(claim, corev1.EventTypeWarning, EventUnavailable, "%s is unavailable: %s", describe(ch.key, ch.prefix), unavailableMessage(ch.reason, ch.prefix, ch.length, ch.holder, ch.detail))
		case changeReleased:
			c.recorder.Eventf(claim, corev1.EventTypeNormal, EventReleased, "Released %s", describe(ch.key, ch.prefix))
		}
		if ch.kind == changeReleased && ch.delegable {
			deletePoolMetrics(ch.claim, ch.prefix.String())
		}
	}
}

// describe names a record in events: its prefix, and its name if it has
// one.
func describe(key networkingv1alpha1.RecordKey, prefix netip.Prefix) string {
	switch {
	case key.Name == "":
		return prefix.String()
	case prefix.IsValid():
		return fmt.Sprintf("%s (%s)", prefix, key.Name)
	}
	return key.Name
}

func (c *Controller) statusWorker(ctx context.Context) {
	for c.writeNext(ctx) {
	}
}

func (c *Controller) writeNext(ctx context.Context) bool {
	name, quit := c.statuses.Get()
	if quit {
		return false
	}
	defer c.statuses.Done(name)
	if err := c.writeStatus(ctx, name); err != nil {
		if !apierrors.IsConflict(err) && !errors.Is(err, errWaitingForRelease) {
			utilruntime.HandleErrorWithContext(ctx, err, "Writing NetworkClaim status failed; will retry", "claim", name)
		}
		c.statuses.AddRateLimited(name)
		return true
	}
	c.statuses.Forget(name)
	return true
}

// checker checks, one claim at a time, that the status of the claims a
// rebuild of the ledger queued shows the ledger's decisions, and queues
// those whose status is behind for a write. It runs beside the status
// workers rather than as one of them, so that after a restart the writes
// of new decisions, which are few, do not wait behind checks of every
// claim, which nearly all find nothing to do; as upstream's repair loops
// (the Service IP repair controller) check what is stored beside the
// allocations, not in their way. A restart thus rewrites no status that
// was already right, and leaves none that was not.
func (c *Controller) checker(ctx context.Context) {
	for c.checkNext(ctx) {
	}
}

func (c *Controller) checkNext(ctx context.Context) bool {
	name, quit := c.checks.Get()
	if quit {
		return false
	}
	defer c.checks.Done(name)
	claim, err := c.lister.Get(name)
	if err != nil {
		return true // deleted since: the decider released it
	}
	if r, ok := c.render(claim); ok && !apiequality.Semantic.DeepEqual(claim.Status, r.status) {
		c.statuses.Add(name)
	}
	return true
}

// rendered is a claim's status as the ledger's decisions render it.
type rendered struct {
	status networkingv1alpha1.NetworkClaimStatus
	// generation is the generation the decisions are of.
	generation int64
	// fenced: the write fence holds the write back.
	fenced bool
}

// render renders the ledger's decisions on claim as its status; false
// when the ledger has not decided the claim's spec as the cache holds it
// yet (the decider queues the claim's status once it has).
func (c *Controller) render(claim *networkingv1alpha1.NetworkClaim) (rendered, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	generation, decisions, known := c.ledger.records(claim.Name, claim.UID)
	if !known || generation != claim.Generation {
		return rendered{}, false
	}
	r := rendered{
		status:     desiredStatus(claim, generation, decisions),
		generation: generation,
		fenced:     c.ledger.fenced(claim.Name, newlyAllocated(claim, decisions)),
	}
	return r, true
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
	r, ok := c.render(claim)
	if !ok {
		// The informer has a spec the ledger has not decided yet; the
		// decider will queue the claim again once it has.
		return nil
	}
	if r.fenced {
		// The release's event queues the claim again; the rate-limited
		// retry is the safety net.
		return errWaitingForRelease
	}
	if !apiequality.Semantic.DeepEqual(claim.Status, r.status) {
		update := claim.DeepCopy()
		update.Status = r.status
		if _, err := c.client.NetworkingV1alpha1().NetworkClaims().UpdateStatus(ctx, update, metav1.UpdateOptions{FieldManager: Identity}); err != nil {
			return fmt.Errorf("NetworkClaim %s: %w", name, err)
		}
		c.reportPressure(claim, claim.Status.AddressSpace, r.status.AddressSpace)
	}
	setPoolMetrics(name, r.status.AddressSpace)
	c.mu.Lock()
	observed := c.ledger.recorded(name, r.generation)
	c.mu.Unlock()
	for _, t := range observed {
		decisionLatency.Observe(time.Since(t).Seconds())
	}
	return nil
}

// scheduleExpiry has the decider look at the ledger again when the next
// reuse grace period ends. The caller holds c.mu.
func (c *Controller) scheduleExpiry() {
	if at, claim, ok := c.ledger.nextExpiry(); ok {
		c.decisions.AddAfter(claim, time.Until(at))
	}
}

// reportPressure records an event for each pool of a claim whose use
// crossed a threshold in the status just written: a warning when it rises
// past 80% or 95%, a normal event when it falls below 80%.
func (c *Controller) reportPressure(claim *networkingv1alpha1.NetworkClaim, before, after []networkingv1alpha1.AddressSpaceStatus) {
	for _, s := range after {
		if s.Pool == nil {
			continue
		}
		was := int32(0)
		for _, old := range before {
			if old.Name == s.Name && old.Prefix == s.Prefix && old.Pool != nil {
				was = old.Pool.UsedPercent
			}
		}
		levelBefore, level := pressureLevel(was), pressureLevel(s.Pool.UsedPercent)
		switch {
		case level == levelBefore:
		case s.Pool.UsedPercent > was:
			c.recorder.Eventf(claim, corev1.EventTypeWarning, EventPoolNearlyFull, "Pool %s is %d%% used (%s allocated, %s reserved, %s cooling, %s free of %s addresses); largest free block: %s",
				s.Prefix, s.Pool.UsedPercent, s.Pool.Allocated, s.Pool.Reserved, s.Pool.Cooling, s.Pool.Free, s.Pool.Addresses, orNone(s.Pool.LargestFreePrefix))
		case level == networkingv1alpha1.ReasonBelow80Percent:
			c.recorder.Eventf(claim, corev1.EventTypeNormal, EventPoolUtilizationNormal, "Pool %s is %d%% used, below %d%%", s.Prefix, s.Pool.UsedPercent, pressureWarning)
		}
	}
}
