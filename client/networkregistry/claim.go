package networkregistry

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	applyv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/applyconfiguration/networking/v1alpha1"
)

// Record is one record a component claims: a prefix it names, or any free
// prefix of a length taken from another claim's delegable prefix (a pool
// record).
type Record struct {
	// Name tells the record apart from the claim's others: a DNS label,
	// e.g. pods-v4, unique in the claim. Required for a pool record,
	// whose prefix the registry chooses; optional otherwise.
	Name string
	// Prefix is the claimed prefix, in canonical form (no host bits set),
	// e.g. 10.96.0.0/12. Zero for a pool record.
	Prefix netip.Prefix
	// From names the claim, and optionally which of its delegable
	// prefixes, the record is taken from. Required for a pool record. With
	// Prefix, it says Prefix is a sub-prefix delegated by that claim, so
	// that it does not conflict with it.
	From *PrefixSource
	// PrefixLength asks, with From and without Prefix, for the lowest free
	// prefix of this length inside the pool (first fit), e.g. 16 for a
	// /16. 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one.
	PrefixLength int
	// Delegable lets other claims take sub-prefixes of the record's
	// prefix, naming this claim in their From.
	Delegable bool
	// Reference names the resource the range is for, e.g. group "" and
	// resource "services"; nil for none.
	Reference *v1alpha1.ResourceReference
	// Description says what the range is for, in at most 255 characters.
	Description string
}

// PrefixSource names the delegable prefix a record is taken from.
type PrefixSource struct {
	// Claim is the NetworkClaim that holds the delegable prefix.
	Claim string
	// Prefix picks one of the claim's delegable prefixes, e.g. 10.0.0.0/8;
	// zero takes from the first of them, in the claim's spec order, that
	// has room for the record.
	Prefix netip.Prefix
}

// Claim creates or updates the NetworkClaim name so that the records this
// Registry's field manager owns in its spec are exactly records: it applies
// them by server-side apply, taking over the fields from other managers
// (Force). Records that other field managers applied to the same claim stay.
// It returns the claim as written; the registry decides on it afterwards, see
// WaitForAllocation and WaitForPrefix.
//
// It checks the records before it writes, and says what to write instead of
// a record the API server would refuse.
func (r *Registry) Claim(ctx context.Context, name string, records []Record) (*v1alpha1.NetworkClaim, error) {
	if r.fieldManager == "" {
		return nil, fmt.Errorf("NetworkClaim %s: the Registry has no field manager to claim with; pass New or NewForConfig your component's name, e.g. \"my-cni\"", name)
	}
	if err := checkRecords(name, records); err != nil {
		return nil, err
	}
	spec := applyv1alpha1.NetworkClaimSpec()
	for _, record := range records {
		spec.WithAddressSpace(applyRecord(record))
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

// applyRecord is the apply configuration of a checked record. Fields left
// at their zero value are not sent, so that this field manager does not own
// them.
func applyRecord(record Record) *applyv1alpha1.AddressSpaceRecordApplyConfiguration {
	ac := applyv1alpha1.AddressSpaceRecord()
	if record.Name != "" {
		ac.WithName(record.Name)
	}
	if record.Prefix.IsValid() {
		ac.WithPrefix(record.Prefix.String())
	} else {
		ac.WithPrefixLength(int32(record.PrefixLength))
	}
	if from := record.From; from != nil {
		source := applyv1alpha1.PrefixSource().WithClaim(from.Claim)
		if from.Prefix.IsValid() {
			source.WithPrefix(from.Prefix.String())
		}
		ac.WithFrom(source)
	}
	if record.Delegable {
		ac.WithDelegable(true)
	}
	if record.Reference != nil {
		ac.WithReference(applyv1alpha1.ResourceReference().
			WithGroup(record.Reference.Group).
			WithResource(record.Reference.Resource))
	}
	if record.Description != "" {
		ac.WithDescription(record.Description)
	}
	return ac
}

// checkRecords checks what the API server would refuse, or read otherwise
// than meant, in the records of the claim name, and says what to write.
func checkRecords(name string, records []Record) error {
	names := map[string]int{}
	for i, record := range records {
		what := fmt.Sprintf("record %d", i)
		if record.Name != "" {
			what = fmt.Sprintf("record %d (%s)", i, record.Name)
			if msgs := validation.IsDNS1123Label(record.Name); len(msgs) > 0 {
				return fmt.Errorf("NetworkClaim %s: %s has an invalid name: %s; write a short name such as pods-v4", name, what, strings.Join(msgs, "; "))
			}
			if j, ok := names[record.Name]; ok {
				return fmt.Errorf("NetworkClaim %s: %s has the name of record %d; give each record its own", name, what, j)
			}
			names[record.Name] = i
		}
		if err := checkRecord(name, record); err != nil {
			return fmt.Errorf("NetworkClaim %s: %s %w", name, what, err)
		}
	}
	return nil
}

func checkRecord(claim string, record Record) error {
	from := record.From
	if from != nil {
		switch {
		case from.Claim == "":
			return errors.New("has a From without Claim; name the NetworkClaim to take the prefix from, e.g. org-pods")
		case from.Claim == claim:
			return fmt.Errorf("is taken from the claim itself (From.Claim %s); a claim's records never conflict with each other's space: leave From out", from.Claim)
		}
		if msgs := validation.IsDNS1123Subdomain(from.Claim); len(msgs) > 0 {
			return fmt.Errorf("has an invalid From.Claim %q: %s; write a NetworkClaim's name, e.g. org-pods", from.Claim, strings.Join(msgs, "; "))
		}
		if from.Prefix.IsValid() && from.Prefix.Masked() != from.Prefix {
			return fmt.Errorf("has From.Prefix %s with host bits set; write %s", from.Prefix, from.Prefix.Masked())
		}
	}
	if record.Prefix.IsValid() {
		if masked := record.Prefix.Masked(); masked != record.Prefix {
			return fmt.Errorf("has prefix %s with host bits set; claim %s", record.Prefix, masked)
		}
		if record.PrefixLength != 0 {
			return fmt.Errorf("has both Prefix %s and PrefixLength %d; set Prefix to claim that prefix, or PrefixLength with From to let the registry choose one", record.Prefix, record.PrefixLength)
		}
		if from != nil && from.Prefix.IsValid() && (record.Prefix.Bits() < from.Prefix.Bits() || !from.Prefix.Contains(record.Prefix.Addr())) {
			return fmt.Errorf("has prefix %s outside From.Prefix %s; claim a sub-prefix of it, or leave From.Prefix out", record.Prefix, from.Prefix)
		}
		return nil
	}
	// A pool record: the registry chooses the prefix.
	switch {
	case from == nil && record.PrefixLength == 0:
		return errors.New("has no prefix; set Prefix, e.g. 10.96.0.0/12, or From and PrefixLength to take one from another claim's delegable prefix")
	case from == nil:
		return fmt.Errorf("has PrefixLength %d without From; name the claim to take the /%d from, e.g. From: &PrefixSource{Claim: \"org-pods\"}", record.PrefixLength, record.PrefixLength)
	case record.PrefixLength == 0:
		return fmt.Errorf("is taken from NetworkClaim %s without PrefixLength; set the length to take, e.g. PrefixLength: 16 for a /16, or a Prefix inside its delegable prefix", from.Claim)
	case record.Name == "":
		return fmt.Errorf("is taken from NetworkClaim %s without a Name; name it, e.g. Name: \"pods-v4\": the registry chooses its prefix, and the name tells it apart", from.Claim)
	}
	if from.Prefix.IsValid() {
		if n := record.PrefixLength; n < from.Prefix.Bits() || n > from.Prefix.Addr().BitLen() {
			return fmt.Errorf("has PrefixLength %d, which does not fit in From.Prefix %s; write %d to %d", n, from.Prefix, max(from.Prefix.Bits(), 1), from.Prefix.Addr().BitLen())
		}
	} else if n := record.PrefixLength; n < 0 || n > 128 {
		return fmt.Errorf("has PrefixLength %d; write 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one", n)
	}
	return nil
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
	e := &UnavailableError{Claim: name, Reason: ready.Reason, Message: ready.Message}
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
// they are taken from have no room or do not exist. Test for it with
// errors.As; each of Records says why in fields (Reason, ConflictsWith) as
// well as in words (Message).
type UnavailableError struct {
	// Claim is the NetworkClaim's name.
	Claim string
	// Records are the claim's status records that say Unavailable, in
	// spec order. Each has a Reason (v1alpha1.ReasonConflict,
	// ReasonPoolExhausted or ReasonPoolNotFound), a Message for people,
	// and for a conflict, ConflictsWith: the allocation it overlaps. A
	// record taken from a pool has its Name and no Prefix.
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
