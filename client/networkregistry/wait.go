package networkregistry

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// WaitForAllocation waits until the registry has decided on the current
// generation of the NetworkClaim name (and, after Claim, on the generation
// that Claim wrote): its status.observedGeneration and its Ready condition
// describe that generation. It returns the claim when every record is
// allocated, and the claim with an *UnavailableError when some record is
// not.
//
// It returns as soon as the registry has decided, and a decision is not
// final: a record found Unavailable may be allocated later, when the holder
// of the overlapping prefix releases it, and WaitForAllocation does not wait
// for that. Call it again after changing the claim, or use the queries,
// which answer from the latest state, or watch the NetworkClaim.
//
// It waits for changes seen by the registry's informer (it never polls the
// API server), so Start must have returned nil; once it returns, the
// registry's queries include the claim's allocations.
//
// After Claim, it waits for the object Claim wrote: when that object is
// deleted (or deleted and created again, which makes a new object) before
// the registry decides on it, or was deleted before the call, it returns an
// error saying so. For a name never passed to Claim, it waits for whatever
// claim of that name exists, and, when none does, for one to be created:
// call Claim first to be told of deletions. When ctx ends first, it returns
// ctx's error, naming the claim.
func (r *Registry) WaitForAllocation(ctx context.Context, name string) (*v1alpha1.NetworkClaim, error) {
	if !r.synced.Load() {
		return nil, fmt.Errorf("waiting for NetworkClaim %s: the Registry is not started; call Start first", name)
	}
	var claim *v1alpha1.NetworkClaim
	var ready *metav1.Condition
	var deleted bool
	err := r.waitFor(ctx, func() bool {
		want, claimed := r.applied[name]
		if claimed && want.deleted {
			deleted = true
			return true
		}
		c := r.claims[name]
		if c == nil {
			return false
		}
		if claimed && (c.UID != want.uid || c.Generation < want.generation) {
			return false // the informer has not seen Claim's write yet
		}
		cond := decision(c)
		if cond == nil {
			return false
		}
		claim, ready = c.DeepCopy(), cond.DeepCopy()
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for NetworkClaim %s to be allocated: %w", name, err)
	}
	if deleted {
		return nil, errDeleted(name)
	}
	return outcome(claim, ready)
}

// WaitForDecision waits, as WaitForAllocation does, for the registry's
// decision on claim, and returns the same: the claim as decided, with an
// *UnavailableError when some record is unavailable. claim is the object
// Claim returned, or one read from the API server: its UID, generation and
// resourceVersion say which object to wait for, the generation to be
// decided, and from when to watch.
//
// Unlike WaitForAllocation, it watches that one claim (by name, from
// claim's resourceVersion) instead of reading the Registry's informer, and
// so needs no Start: for a tool that claims, waits and exits, listing every
// claim of the registry (there may be 100,000) would cost more than the
// decision it waits for.
//
// When claim is deleted (or deleted and created again) before the
// registry decides on it, it returns an error saying so; when ctx ends
// first, ctx's error, naming the claim.
func (r *Registry) WaitForDecision(ctx context.Context, claim *v1alpha1.NetworkClaim) (*v1alpha1.NetworkClaim, error) {
	decided, err := r.watchDecision(ctx, claim)
	if err != nil {
		return nil, err
	}
	return outcome(decided, decision(decided))
}

// watchDecision watches the claim applied until the registry has decided
// on its generation (or a later one), and returns the claim so decided.
func (r *Registry) watchDecision(ctx context.Context, applied *v1alpha1.NetworkClaim) (*v1alpha1.NetworkClaim, error) {
	name := applied.Name
	claims := r.client.NetworkingV1alpha1().NetworkClaims()
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	watcher := &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.FieldSelector = selector
			return claims.Watch(ctx, options)
		},
	}
	gone := errDeleted(name)
	// isDecision reports whether c is the registry's decision on the
	// object applied, and fails when that object is gone.
	isDecision := func(c *v1alpha1.NetworkClaim) (bool, error) {
		if c.UID != applied.UID {
			return false, gone
		}
		return c.Generation >= applied.Generation && Decided(c), nil
	}
	current := applied
	for {
		switch done, err := isDecision(current); {
		case err != nil:
			return nil, err
		case done:
			return current, nil
		}
		var last *v1alpha1.NetworkClaim
		_, err := watchtools.Until(ctx, current.ResourceVersion, watcher, func(e watch.Event) (bool, error) {
			switch e.Type {
			case watch.Error:
				return false, apierrors.FromObject(e.Object)
			case watch.Deleted:
				return false, gone
			}
			c, ok := e.Object.(*v1alpha1.NetworkClaim)
			if !ok {
				return false, nil
			}
			last = c
			return isDecision(c)
		})
		switch {
		case err == nil:
			return last, nil
		case errors.Is(err, gone):
			return nil, err
		case ctx.Err() != nil:
			return nil, fmt.Errorf("waiting for NetworkClaim %s to be allocated: %w", name, context.Cause(ctx))
		case !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err):
			return nil, fmt.Errorf("watching NetworkClaim %s: %w", name, err)
		}
		// Compacted away while the watch was down: read the claim, and
		// watch from where it is now.
		current, err = claims.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, gone
		case err != nil:
			return nil, fmt.Errorf("reading NetworkClaim %s: %w", name, err)
		}
	}
}

// errDeleted says that the claim a wait was for is gone.
func errDeleted(name string) error {
	return fmt.Errorf("NetworkClaim %s was deleted while waiting for its allocation", name)
}

// outcome is what the waits return for a decided claim and its Ready
// condition.
func outcome(claim *v1alpha1.NetworkClaim, ready *metav1.Condition) (*v1alpha1.NetworkClaim, error) {
	if ready.Status == metav1.ConditionTrue {
		return claim, nil
	}
	e := &UnavailableError{Claim: claim.Name, Reason: ready.Reason, Message: ready.Message}
	for _, d := range Decisions(claim) {
		if d.Status != nil && d.Status.Status == v1alpha1.AllocationUnavailable {
			e.Records = append(e.Records, *d.Status)
		}
	}
	return claim, e
}

// WaitForPrefix waits, as WaitForAllocation does, for the registry's
// decision on the NetworkClaim name, and returns the prefix allocated to
// its record called record: for a record taken from a pool, the prefix the
// registry chose. It cares for that record alone: other records of the
// claim may be unavailable. When that record is unavailable, it returns an
// *UnavailableError with that record only; when the claim has no record of
// that name, an error saying so.
func (r *Registry) WaitForPrefix(ctx context.Context, name, record string) (netip.Prefix, error) {
	claim, err := r.WaitForAllocation(ctx, name)
	var unavailable *UnavailableError
	if err != nil && !errors.As(err, &unavailable) {
		return netip.Prefix{}, err
	}
	for _, d := range Decisions(claim) {
		if d.Record.Name != record {
			continue
		}
		if p, ok := d.Allocated(); ok {
			return p, nil
		}
		e := &UnavailableError{Claim: name}
		if d.Status != nil {
			e.Records = []v1alpha1.AddressSpaceStatus{*d.Status}
			e.Reason, e.Message = d.Status.Reason, d.Status.Message
		} else if unavailable != nil {
			// Decided, yet without a status record for this one: the
			// registry says why only for the claim.
			e.Reason, e.Message = unavailable.Reason, unavailable.Message
		}
		return netip.Prefix{}, e
	}
	var names []string
	for _, d := range Decisions(claim) {
		if d.Record.Name != "" {
			names = append(names, d.Record.Name)
		}
	}
	if len(names) == 0 {
		return netip.Prefix{}, fmt.Errorf("NetworkClaim %s has no record named %q; its records have no names", name, record)
	}
	return netip.Prefix{}, fmt.Errorf("NetworkClaim %s has no record named %q; its records are named %s", name, record, strings.Join(names, ", "))
}

// Decided reports whether the registry has decided on the claim's current
// generation: its status.observedGeneration is the generation, and its Ready
// condition is True or False (not Unknown) and, when it records a
// generation, records this one. WaitForAllocation waits for this; tests and
// tools that watch NetworkClaims themselves can ask it too.
func Decided(claim *v1alpha1.NetworkClaim) bool {
	return decision(claim) != nil
}

// decision returns the claim's Ready condition when it is the registry's
// decision on the claim's current generation (see Decided), nil while that
// is pending.
func decision(c *v1alpha1.NetworkClaim) *metav1.Condition {
	if c == nil || c.Status.ObservedGeneration != c.Generation {
		return nil
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.Status == metav1.ConditionUnknown {
		return nil
	}
	if cond.ObservedGeneration != 0 && cond.ObservedGeneration != c.Generation {
		return nil
	}
	return cond
}

// UnavailableError is the registry's refusal of some records of a claim:
// their prefixes overlap prefixes allocated to other claims, or the pools
// they are taken from have no room, do not exist, refuse them by their
// policy, or rest the prefix they ask for after another claim released it.
// Test for it with errors.As; each of Records says why in fields (Reason,
// ConflictsWith) as well as in words (Message).
type UnavailableError struct {
	// Claim is the NetworkClaim's name.
	Claim string
	// Records are the claim's status records that say Unavailable, in
	// spec order. Each has a Reason (v1alpha1.ReasonConflict,
	// ReasonPoolExhausted, ReasonPoolNotFound, ReasonPoolPolicy or
	// ReasonReuseGracePeriod), a Message for people, and for a conflict,
	// ConflictsWith: the allocation it overlaps. A record taken from a pool
	// has its Name and no Prefix.
	Records []v1alpha1.AddressSpaceStatus
	// Reason and Message are those of the claim's Ready condition: the
	// reason of the first unavailable record.
	Reason, Message string
}

// Error names the claim and, for every unavailable record, why, e.g.
// "NetworkClaim pods: 10.96.0.0/16 unavailable: overlaps 10.96.0.0/12 held
// by NetworkClaim kube-apiserver"; a record taken from a pool is named by
// its name: "NetworkClaim cluster-a: pods-v4 unavailable: no free /16 in
// 10.0.0.0/8 of NetworkClaim org-pods".
func (e *UnavailableError) Error() string {
	if len(e.Records) == 0 {
		return fmt.Sprintf("NetworkClaim %s: not allocated: %s: %s", e.Claim, e.Reason, e.Message)
	}
	parts := make([]string, 0, len(e.Records))
	for _, record := range e.Records {
		parts = append(parts, fmt.Sprintf("%s unavailable: %s", recordLabel(record.Name, record.Prefix), record.Message))
	}
	return fmt.Sprintf("NetworkClaim %s: %s", e.Claim, strings.Join(parts, "; "))
}

// Conflicts returns, for the records unavailable because they overlap
// another claim's allocation, those allocations, in the order of Records.
func (e *UnavailableError) Conflicts() []ClaimedPrefix {
	var out []ClaimedPrefix
	for _, record := range e.Records {
		if c := record.ConflictsWith; c != nil {
			if p, err := netip.ParsePrefix(c.Prefix); err == nil {
				out = append(out, ClaimedPrefix{Claim: c.Claim, Prefix: p.Masked()})
			}
		}
	}
	return out
}

// recordLabel names a record in messages: by its prefix, as records were
// named before they had names, or by its name while it has no prefix.
func recordLabel(name, prefix string) string {
	if prefix == "" {
		return name
	}
	return prefix
}

var _ error = (*UnavailableError)(nil)
