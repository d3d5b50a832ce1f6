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
// kube-apiserver"), or which pool has no room or is missing, or detail
// when the reason needs more than that (a pool's policy). The status
// record's reason and conflictsWith say it for programs.
func unavailableMessage(reason string, prefix netip.Prefix, length int, holder holding, detail string) string {
	if detail != "" {
		return detail
	}
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
			s.Pool = d.pool
		} else {
			s.Status = networkingv1alpha1.AllocationUnavailable
			s.Reason = d.reason
			s.Message = unavailableMessage(d.reason, d.prefix, d.req.length, d.holder, d.detail)
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
	setPoolPressure(&status, generation)
	return status
}

// Pool pressure thresholds, in percent used.
const (
	pressureWarning  = 80
	pressureCritical = 95
)

// pressureLevel is the reason of the PoolPressure condition for a pool that
// is used percent full.
func pressureLevel(percent int32) string {
	switch {
	case percent >= pressureCritical:
		return networkingv1alpha1.ReasonAbove95Percent
	case percent >= pressureWarning:
		return networkingv1alpha1.ReasonAbove80Percent
	}
	return networkingv1alpha1.ReasonBelow80Percent
}

// setPoolPressure sets the PoolPressure condition of a claim that holds
// allocated pools from their usage, naming the fullest; a claim without
// pools has none.
func setPoolPressure(status *networkingv1alpha1.NetworkClaimStatus, generation int64) {
	var fullest *networkingv1alpha1.AddressSpaceStatus
	for i := range status.AddressSpace {
		s := &status.AddressSpace[i]
		if s.Pool != nil && (fullest == nil || s.Pool.UsedPercent > fullest.Pool.UsedPercent) {
			fullest = s
		}
	}
	if fullest == nil {
		meta.RemoveStatusCondition(&status.Conditions, networkingv1alpha1.ConditionPoolPressure)
		return
	}
	c := metav1.Condition{
		Type:               networkingv1alpha1.ConditionPoolPressure,
		Status:             metav1.ConditionFalse,
		Reason:             pressureLevel(fullest.Pool.UsedPercent),
		Message:            fmt.Sprintf("the fullest pool, %s, is %d%% used; largest free block: %s", fullest.Prefix, fullest.Pool.UsedPercent, orNone(fullest.Pool.LargestFreePrefix)),
		ObservedGeneration: generation,
	}
	if c.Reason != networkingv1alpha1.ReasonBelow80Percent {
		c.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, c)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
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
