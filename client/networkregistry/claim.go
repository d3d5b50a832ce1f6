package networkregistry

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
)

// Record is one prefix a component claims.
type Record struct {
	// Prefix is the claimed prefix, in canonical form (no host bits set),
	// e.g. 10.96.0.0/12.
	Prefix netip.Prefix
	// Reference names the resource the range is for, e.g. group "" and
	// resource "services"; nil for none.
	Reference *v1alpha1.ResourceReference
	// Description says what the range is for, in at most 255 characters.
	Description string
}

// Claim creates or updates the NetworkClaim name so that the records this
// Registry's field manager owns in its spec are exactly records: it applies
// them by server-side apply, taking over the fields from other managers
// (Force). Records that other field managers applied to the same claim stay.
// It returns the claim as written; the registry decides on it afterwards, see
// WaitForAllocation.
func (r *Registry) Claim(ctx context.Context, name string, records []Record) (*v1alpha1.NetworkClaim, error) {
	if r.fieldManager == "" {
		return nil, fmt.Errorf("NetworkClaim %s: the Registry has no field manager to claim with; pass New or NewForConfig your component's name, e.g. \"my-cni\"", name)
	}
	spec := applyv1alpha1.NetworkClaimSpec()
	for i, record := range records {
		if !record.Prefix.IsValid() {
			return nil, fmt.Errorf("NetworkClaim %s: record %d has no prefix; set one such as 10.96.0.0/12", name, i)
		}
		if masked := record.Prefix.Masked(); masked != record.Prefix {
			return nil, fmt.Errorf("NetworkClaim %s: prefix %s has host bits set; claim %s", name, record.Prefix, masked)
		}
		ac := applyv1alpha1.AddressSpaceRecord().WithPrefix(record.Prefix.String())
		if record.Reference != nil {
			ac.WithReference(applyv1alpha1.ResourceReference().
				WithGroup(record.Reference.Group).
				WithResource(record.Reference.Resource))
		}
		if record.Description != "" {
			ac.WithDescription(record.Description)
		}
		spec.WithAddressSpace(ac)
	}
	r.startClaiming(name)
	claim, err := r.client.NetworkingV1alpha1().NetworkClaims().Apply(ctx,
		applyv1alpha1.NetworkClaim(name).WithSpec(spec),
		metav1.ApplyOptions{FieldManager: r.fieldManager, Force: true})
	if err != nil {
		r.finishClaiming(name, nil)
		return nil, fmt.Errorf("claiming NetworkClaim %s: %w", name, err)
	}
	r.finishClaiming(name, claim)
	return claim, nil
}

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
		return nil, fmt.Errorf("NetworkClaim %s was deleted while waiting for its allocation", name)
	}
	if ready.Status == metav1.ConditionTrue {
		return claim, nil
	}
	e := &UnavailableError{Claim: name, reason: ready.Reason, message: ready.Message}
	for _, record := range claim.Status.AddressSpace {
		if record.Status == v1alpha1.AllocationUnavailable {
			e.Records = append(e.Records, record)
		}
	}
	return claim, e
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
// their prefixes overlap prefixes allocated to other claims. Test for it
// with errors.As.
type UnavailableError struct {
	// Claim is the NetworkClaim's name.
	Claim string
	// Records are the claim's status records that say Unavailable, each
	// with a message naming the holder of an overlapping prefix.
	Records []v1alpha1.AddressSpaceStatus

	// reason and message are the Ready condition's, for when no record
	// says why.
	reason, message string
}

// Error names the claim and, for every unavailable prefix, why, e.g.
// "NetworkClaim pods: 10.96.0.0/16 unavailable: overlaps 10.96.0.0/12 held
// by NetworkClaim kube-apiserver".
func (e *UnavailableError) Error() string {
	if len(e.Records) == 0 {
		return fmt.Sprintf("NetworkClaim %s: not allocated: %s: %s", e.Claim, e.reason, e.message)
	}
	parts := make([]string, 0, len(e.Records))
	for _, record := range e.Records {
		parts = append(parts, fmt.Sprintf("%s unavailable: %s", record.Prefix, record.Message))
	}
	return fmt.Sprintf("NetworkClaim %s: %s", e.Claim, strings.Join(parts, "; "))
}

var _ error = (*UnavailableError)(nil)
