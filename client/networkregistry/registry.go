// Package networkregistry is the consumer side of the NetworkClaim registry
// (KANA): it lets a network component ask who holds an address or a prefix,
// list the ranges allocated for a kind of resource, and claim ranges of its
// own and wait for the registry's decision.
//
// A Registry keeps, from an informer of NetworkClaims, every claim and an
// index of every allocated prefix (a prefix trie, see the prefixindex
// package), so that its queries are answered from memory, without a request
// to the API server. WhoHas and Overlaps ask the trie, in time that grows
// with the prefix length and the number of answers rather than with the
// number of claims; the listing queries (Prefixes, Allocations, Claims,
// Pools) go through every claim or allocation, in time that grows with their
// number.
// Call Start once before querying: until Start has returned nil, every query
// returns nothing (no allocation, no claim), which is not the same as
// "nothing is allocated".
//
// Only what the registry decided counts: a prefix is allocated when its
// claim's status says Allocated and the record it answers is still in the
// claim's spec, asking the same: the same prefix, or for a record taken from
// a pool (a name, from and prefixLength), the same name, the prefix being the
// one the registry chose (see Decisions). Prefixes that are unavailable (they
// overlap another claim's, or the pool has no room) or not decided yet are
// not allocations. Allocations say which delegable allocation they were
// taken from, and Chain walks those steps up to the root of the delegation.
// Pools lists the delegable allocations with their policy, how full the
// registry says each is, and the claims that took from each (its tenants).
//
// A component that takes ranges from a pool (Record with From and
// PrefixLength) learns which prefix the registry chose from WaitForPrefix,
// for one record, or from AllocationsOf the claim that WaitForAllocation
// returns, for all of them. A tool that claims, waits and exits needs no
// Start: WaitForDecision watches the one claim that Claim wrote.
//
// Claim checks the records with the API's own validation before it writes
// (ValidateClaim), so that what the server would refuse is refused with the
// server's words.
//
// Decisions are not final. WaitForAllocation returns as soon as the registry
// has decided on a claim; a prefix it found Unavailable may be allocated
// later, when the claim holding the overlapping prefix releases it, and
// nothing tells the caller of WaitForAllocation. A component that needs to
// know calls WaitForAllocation again after changing its claim, or asks the
// Registry's queries (which always answer from the latest state), or
// watches its NetworkClaim.
//
// The package depends on client-go and the generated client of this module
// only, never on k8s.io/kubernetes.
package networkregistry

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	informers "sigs.k8s.io/sample-generic-controlplane/client/informers/externalversions/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry/prefixindex"
)

// Allocation is one prefix the registry allocated to a claim: the answer to
// "who holds this address space, and what for?".
type Allocation struct {
	// Claim is the name of the NetworkClaim that holds Prefix.
	Claim string
	// Name is the name of the claim's record; empty for an unnamed one.
	Name string
	// Prefix is the allocated prefix, in canonical form: the record's own,
	// or the one the registry chose for a record taken from a pool.
	Prefix netip.Prefix
	// Reference names the resource the range is for (e.g. group "" and
	// resource "services"); nil when the claim names none.
	Reference *v1alpha1.ResourceReference
	// Description says what the range is for, as the claim wrote it.
	Description string
	// Delegable is whether other claims may take sub-prefixes of Prefix.
	Delegable bool
	// DelegatedFrom is the delegable allocation of another claim that
	// Prefix was taken from: one step up the delegation chain (see
	// Registry.Chain). Nil for a prefix claimed in its own right, and for
	// one whose delegating allocation is gone (it keeps its prefix).
	DelegatedFrom *ClaimedPrefix
	// Date is when the registry allocated the prefix.
	Date time.Time
}

// ClaimedPrefix is a prefix and the claim that holds it.
type ClaimedPrefix struct {
	// Claim is the NetworkClaim's name.
	Claim string
	// Prefix is the claim's allocated prefix.
	Prefix netip.Prefix
}

// Registry answers questions about the cluster's address space from an
// informer of NetworkClaims, and claims address space by server-side apply.
// Its methods are safe for concurrent use.
type Registry struct {
	client       versioned.Interface
	fieldManager string
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration

	// giveUp stops the informer, and so Start's wait, with a request error
	// that retrying does not fix. Start sets it before the informer runs.
	giveUp context.CancelCauseFunc

	starting atomic.Bool // Start was called
	synced   atomic.Bool // Start returned nil

	mu sync.RWMutex
	// index maps each allocated prefix to the names of the claims holding it.
	index prefixindex.Index[string]
	// allocations are the allocations of each claim, by prefix: what index
	// holds for the claim, with the details index does not keep.
	allocations map[string]map[netip.Prefix]Allocation
	// claims are the NetworkClaims as the event handlers last saw them, so
	// that a claim and the index always agree.
	claims map[string]*v1alpha1.NetworkClaim
	// waiting are, per claim, its decisions that allocate nothing: its
	// records unavailable or not decided yet, in spec order.
	waiting map[string][]Decision
	// poolHolders are the claims that hold a delegable allocation: Pools
	// starts from them rather than from every claim.
	poolHolders sets.Set[string]
	// applied is, per claim name, the object Claim last wrote, so that
	// WaitForAllocation waits for the registry's decision on that write
	// rather than returning a decision on an older generation, and learns
	// when that object is deleted. It is never pruned: WaitForAllocation
	// must still say "deleted" when called after the deletion, so an entry
	// lives until the next Claim of its name replaces it. That is one small
	// entry per name ever passed to Claim, and a component claims few.
	applied map[string]appliedClaim
	// claiming counts, per claim name, the Claim calls whose write has not
	// returned yet; deletedWhileClaiming are the UIDs the event handlers saw
	// deleted meanwhile, so that a Claim whose object is deleted before the
	// call records it still learns that it was.
	claiming             map[string]int
	deletedWhileClaiming map[string][]types.UID
	// changed is closed, and replaced, whenever the event handlers changed
	// anything: waiters take it under mu, then check, then wait on it.
	changed chan struct{}
}

// appliedClaim identifies a claim's spec written by Claim.
type appliedClaim struct {
	uid        types.UID
	generation int64
	// deleted is set when the event handlers saw the object of uid deleted.
	deleted bool
}

// New returns a Registry that reads and writes NetworkClaims through client.
// fieldManager names the component in the managed fields of the claims that
// Claim writes (server-side apply), e.g. "my-cni"; a Registry that only
// queries may leave it empty, and Claim then returns an error.
func New(client versioned.Interface, fieldManager string) *Registry {
	r := &Registry{
		client:       client,
		fieldManager: fieldManager,
		informer:     informers.NewNetworkClaimInformer(client, 0, cache.Indexers{}),
		allocations:  map[string]map[netip.Prefix]Allocation{},
		claims:       map[string]*v1alpha1.NetworkClaim{},
		waiting:      map[string][]Decision{},
		poolHolders:  sets.New[string](),
		applied:      map[string]appliedClaim{},
		claiming:     map[string]int{},
		changed:      make(chan struct{}),

		deletedWhileClaiming: map[string][]types.UID{},
	}
	// The setters below fail only once the informer has started (or, for
	// AddEventHandler, stopped); this one has not.
	//
	// The registry never reads managed fields; they are often most of a
	// claim's size.
	_ = r.informer.SetTransform(stripManagedFields)
	_ = r.informer.SetWatchErrorHandlerWithContext(r.listError)
	r.registration, _ = r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.update(obj) },
		UpdateFunc: func(_, obj any) { r.update(obj) },
		DeleteFunc: r.delete,
	})
	return r
}

// NewForConfig returns a Registry that talks to the API server of config;
// see New for fieldManager.
func NewForConfig(config *rest.Config, fieldManager string) (*Registry, error) {
	// The clientset asks for protobuf, JSON accepted, unless config names
	// a content type: NetworkClaims are served in both.
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("networkregistry: client for %s: %w", config.Host, err)
	}
	return New(client, fieldManager), nil
}

// Snapshot returns a Registry that answers from one list of the
// NetworkClaims, without watching them: for one-shot tools, such as the
// registry subcommands, which ask once and exit. It fails at once when the
// list fails. It cannot Start, Claim or WaitForAllocation.
func Snapshot(ctx context.Context, client versioned.Interface) (*Registry, error) {
	list, err := client.NetworkingV1alpha1().NetworkClaims().List(ctx, metav1.ListOptions{})
	if err != nil {
		if permanent(err) {
			return nil, explainListError(err)
		}
		return nil, fmt.Errorf("networkregistry: NetworkClaims not listed: %w", err)
	}
	r := New(client, "")
	r.starting.Store(true) // no informer: nothing to start
	for i := range list.Items {
		r.update(&list.Items[i])
	}
	r.synced.Store(true)
	return r, nil
}

// Start runs the informer until ctx ends and waits until the registry has
// indexed every NetworkClaim that exists. Call it once; until it returns
// nil, queries return nothing. After ctx ends, queries answer from the last
// state the registry saw.
//
// The informer retries failed requests, as informers do, except those that
// retrying does not fix: when the server does not serve the NetworkClaim API
// (is its KANA feature gate off?), does not accept the client's credentials,
// or forbids it to list NetworkClaims, Start returns at once with an error
// that says so and wraps the server's (apierrors.IsNotFound, IsUnauthorized,
// IsForbidden tell them apart), and the informer stops. Other failures (a
// refused connection, a server error) are logged and retried until ctx ends.
func (r *Registry) Start(ctx context.Context) error {
	if r.starting.Swap(true) {
		return errors.New("networkregistry: Start called twice; call it once per Registry")
	}
	informerCtx, giveUp := context.WithCancelCause(ctx)
	r.giveUp = giveUp // before the informer, whose error handler calls it, runs
	go r.informer.RunWithContext(informerCtx)
	if !cache.WaitFor(informerCtx, "", r.registration.HasSyncedChecker()) {
		cause := context.Cause(informerCtx)
		giveUp(nil) // stop the informer either way
		if permanent(cause) {
			return explainListError(cause)
		}
		return fmt.Errorf("networkregistry: NetworkClaims not listed: %w", cause)
	}
	r.synced.Store(true)
	return nil
}

// listError is the informer's handler of failed list and watch requests:
// while Start waits, an error that retrying cannot fix ends the wait (Start
// returns it); others are logged and retried, as informers do.
func (r *Registry) listError(ctx context.Context, reflector *cache.Reflector, err error) {
	if !r.synced.Load() && ctx.Err() == nil && permanent(err) {
		r.giveUp(err)
		return
	}
	cache.DefaultWatchErrorHandler(ctx, reflector, err)
}

// permanent reports whether err is a request error that retrying does not
// fix.
func permanent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}

// explainListError says what a permanent list error means, and wraps it.
func explainListError(err error) error {
	var hint string
	switch {
	case apierrors.IsNotFound(err):
		hint = fmt.Sprintf("the server does not serve the NetworkClaim API (%s): is its KANA feature gate off?", v1alpha1.SchemeGroupVersion)
	case apierrors.IsUnauthorized(err):
		hint = "the server did not accept the client's credentials"
	default:
		hint = "grant the client list and watch on networkclaims, e.g. by the view ClusterRole"
	}
	return fmt.Errorf("networkregistry: NetworkClaims not listed: %w; %s", err, hint)
}

func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// update indexes a claim that was added or changed: it replaces the claim's
// previous allocations by its current ones.
func (r *Registry) update(obj any) {
	claim, ok := obj.(*v1alpha1.NetworkClaim)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old := r.claims[claim.Name]; old != nil && old.UID != claim.UID {
		// Deleted and created again while the informer was not watching
		// (it relisted): no delete event comes for the old object.
		r.deleted(claim.Name, old.UID)
	}
	r.unindex(claim.Name)
	decisions := Decisions(claim)
	current := map[netip.Prefix]Allocation{}
	for _, a := range allocationsFrom(claim.Name, decisions) {
		current[a.Prefix] = a
	}
	for p := range current {
		r.index.Insert(p, claim.Name)
	}
	if len(current) > 0 {
		r.allocations[claim.Name] = current
	}
	if holdsPool(current) {
		r.poolHolders.Insert(claim.Name)
	}
	for _, d := range decisions {
		if _, ok := d.Allocated(); !ok {
			r.waiting[claim.Name] = append(r.waiting[claim.Name], d)
		}
	}
	r.claims[claim.Name] = claim
	r.notify()
}

// delete removes a deleted claim's allocations. obj is the claim, or a
// cache.DeletedFinalStateUnknown holding its last known state when the
// informer missed the deletion.
func (r *Registry) delete(obj any) {
	name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var uid types.UID
	if m, err := meta.Accessor(obj); err == nil {
		uid = m.GetUID()
	} else if last := r.claims[name]; last != nil {
		uid = last.UID
	}
	r.deleted(name, uid)
	r.unindex(name)
	delete(r.claims, name)
	r.notify()
}

// deleted records that the object uid of the claim name is gone, for
// WaitForAllocation; r.mu must be held for writing.
func (r *Registry) deleted(name string, uid types.UID) {
	if uid == "" {
		return
	}
	if a, ok := r.applied[name]; ok && a.uid == uid {
		a.deleted = true
		r.applied[name] = a
	}
	if r.claiming[name] > 0 {
		r.deletedWhileClaiming[name] = append(r.deletedWhileClaiming[name], uid)
	}
}

// startClaiming notes that a Claim of name is writing; finishClaiming
// records what it wrote (nil when the write failed).
func (r *Registry) startClaiming(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claiming[name]++
}

func (r *Registry) finishClaiming(name string, claim *v1alpha1.NetworkClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if claim != nil {
		r.recordApplied(name, appliedClaim{
			uid:        claim.UID,
			generation: claim.Generation,
			deleted:    slices.Contains(r.deletedWhileClaiming[name], claim.UID),
		})
	}
	if r.claiming[name]--; r.claiming[name] <= 0 {
		delete(r.claiming, name)
		delete(r.deletedWhileClaiming, name)
	}
}

// recordApplied keeps, of the objects concurrent Claim calls wrote, the one
// to wait for: for one object, its highest generation (the calls may
// return out of order); an object already deleted never replaces one that
// is not. r.mu must be held for writing.
func (r *Registry) recordApplied(name string, written appliedClaim) {
	current, ok := r.applied[name]
	switch {
	case !ok:
		current = written
	case current.uid == written.uid:
		current.generation = max(current.generation, written.generation)
		current.deleted = current.deleted || written.deleted
	case written.deleted && !current.deleted:
		// An older object, deleted since: the current one stays.
	default:
		current = written
	}
	r.applied[name] = current
	r.notify()
}

// unindex removes a claim's allocations from the index, and its records
// from those waiting; r.mu must be held.
func (r *Registry) unindex(name string) {
	for p := range r.allocations[name] {
		r.index.Delete(p, name)
	}
	delete(r.allocations, name)
	delete(r.waiting, name)
	r.poolHolders.Delete(name)
}

// Changed returns a channel that is closed at the registry's next change: a
// NetworkClaim added, changed or deleted, as the informer delivers it. To
// follow the registry, take the channel first, then query, then wait on it,
// and repeat: a change made between the query and the wait still closes the
// channel taken before the query. Changes come one claim at a time; a
// follower that rebuilds a view of the whole registry should let a few
// arrive before it does.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.changed
}

// notify wakes every waiter; r.mu must be held for writing.
func (r *Registry) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor waits until done, called with r.mu held for reading, returns true
// or ctx ends. done is checked again after every change the event handlers
// make, never by polling.
func (r *Registry) waitFor(ctx context.Context, done func() bool) error {
	for {
		r.mu.RLock()
		changed := r.changed
		ok := done()
		r.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
