package allocation

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// unavailableMessage says, for people, why a record waits: which claim
// holds the space ("overlaps 10.96.0.0/12 held by NetworkClaim
// kube-apiserver"), or which pool has no room or is missing. The status
// record's reason and conflictsWith say it for programs.
func unavailableMessage(reason string, prefix netip.Prefix, length int, holder holding) string {
	switch reason {
	case networkingv1alpha1.ReasonPoolExhausted:
		return fmt.Sprintf("no free /%d in %s of NetworkClaim %s", length, holder.prefix, holder.claim)
	case networkingv1alpha1.ReasonPoolNotFound:
		switch {
		case length < 0:
			return fmt.Sprintf("NetworkClaim %s holds no allocated delegable prefix that strictly contains %s", holder.claim, prefix)
		case holder.prefix.IsValid():
			return fmt.Sprintf("NetworkClaim %s holds no allocated delegable prefix %s", holder.claim, holder.prefix)
		}
		return fmt.Sprintf("NetworkClaim %s holds no allocated delegable prefix that can hold a /%d", holder.claim, length)
	}
	return fmt.Sprintf("overlaps %s held by NetworkClaim %s", holder.prefix, holder.claim)
}

// desiredStatus renders the ledger's decisions on a claim as its status:
// one record per spec record, in spec order, and the Ready condition. The
// decisions are of the claim's spec at generation, as the claim is.
func desiredStatus(claim *networkingv1alpha1.NetworkClaim, generation int64, decisions []decision) networkingv1alpha1.NetworkClaimStatus {
	status := networkingv1alpha1.NetworkClaimStatus{
		ObservedGeneration: generation,
		Conditions:         append([]metav1.Condition(nil), claim.Status.Conditions...),
	}
	var unavailable []networkingv1alpha1.AddressSpaceStatus
	for _, d := range decisions {
		r := claim.Spec.AddressSpace[d.index]
		s := networkingv1alpha1.AddressSpaceStatus{
			Name:        r.Name,
			Reference:   r.Reference.DeepCopy(),
			Description: r.Description,
			Delegable:   r.Delegable,
			Date:        metav1.NewTime(d.since),
			Status:      networkingv1alpha1.AllocationAllocated,
		}
		if d.prefix.IsValid() {
			s.Prefix = d.prefix.String()
		}
		if d.seq != 0 {
			s.FirstSeenResourceVersion = strconv.FormatUint(d.seq, 10)
		}
		if d.allocated {
			if d.parent.claim != "" {
				s.DelegatedFrom = &networkingv1alpha1.ClaimedPrefix{Claim: d.parent.claim, Prefix: d.parent.prefix.String()}
			}
		} else {
			s.Status = networkingv1alpha1.AllocationUnavailable
			s.Reason = d.reason
			s.Message = unavailableMessage(d.reason, d.prefix, d.req.length, d.holder)
			if d.reason == networkingv1alpha1.ReasonConflict {
				s.ConflictsWith = &networkingv1alpha1.ClaimedPrefix{Claim: d.holder.claim, Prefix: d.holder.prefix.String()}
			}
			unavailable = append(unavailable, s)
		}
		status.AddressSpace = append(status.AddressSpace, s)
	}
	ready := metav1.Condition{
		Type:               networkingv1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             networkingv1alpha1.ReasonAllocated,
		Message:            fmt.Sprintf("all %d records are allocated", len(status.AddressSpace)),
		ObservedGeneration: generation,
	}
	if len(unavailable) > 0 {
		first := unavailable[0]
		ready.Status, ready.Reason = metav1.ConditionFalse, first.Reason
		ready.Message = fmt.Sprintf("%d of %d records unavailable: %s %s", len(unavailable), len(status.AddressSpace), describeStatus(first), first.Message)
		if len(unavailable) > 1 {
			ready.Message += fmt.Sprintf("; and %d more", len(unavailable)-1)
		}
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	return status
}

// describeStatus names a status record: by prefix, else by name.
func describeStatus(s networkingv1alpha1.AddressSpaceStatus) string {
	if s.Prefix != "" {
		return s.Prefix
	}
	return s.Name
}

// newlyAllocated returns the prefixes the decisions allocate that the
// claim's stored status does not show allocated yet: what the write fence
// must let through.
func newlyAllocated(claim *networkingv1alpha1.NetworkClaim, decisions []decision) []netip.Prefix {
	stored := storedAllocations(claim)
	var out []netip.Prefix
	for _, d := range decisions {
		if d.allocated && !slices.Contains(stored, d.prefix) {
			out = append(out, d.prefix)
		}
	}
	return out
}
