package allocation

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

const reasonAllocated = "Allocated"

// unavailableMessage names the holder, as the issue and users expect:
// "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver".
func unavailableMessage(holderPrefix netip.Prefix, holder string) string {
	return fmt.Sprintf("overlaps %s held by NetworkClaim %s", holderPrefix, holder)
}

// parseUnavailableMessage reads the holder back from a message written by
// unavailableMessage.
func parseUnavailableMessage(message string) (netip.Prefix, string, bool) {
	rest, ok := strings.CutPrefix(message, "overlaps ")
	if !ok {
		return netip.Prefix{}, "", false
	}
	prefix, holder, ok := strings.Cut(rest, " held by NetworkClaim ")
	if !ok || holder == "" {
		return netip.Prefix{}, "", false
	}
	p, err := netip.ParsePrefix(prefix)
	if err != nil {
		return netip.Prefix{}, "", false
	}
	return p, holder, true
}

// desiredStatus renders the ledger's decisions on a claim as its status:
// one record per spec record, in spec order, and the Ready condition.
func desiredStatus(claim *networkingv1alpha1.NetworkClaim, generation int64, decisions map[netip.Prefix]decision) networkingv1alpha1.NetworkClaimStatus {
	status := networkingv1alpha1.NetworkClaimStatus{
		ObservedGeneration: generation,
		Conditions:         append([]metav1.Condition(nil), claim.Status.Conditions...),
	}
	var unavailable []networkingv1alpha1.AddressSpaceStatus
	for _, r := range claim.Spec.AddressSpace {
		p, err := netip.ParsePrefix(r.Prefix)
		if err != nil {
			continue // validation admits only canonical prefixes
		}
		d, ok := decisions[p]
		if !ok {
			continue
		}
		s := networkingv1alpha1.AddressSpaceStatus{
			Reference:   r.Reference.DeepCopy(),
			Prefix:      r.Prefix,
			Description: r.Description,
			Date:        metav1.NewTime(d.since),
			Status:      networkingv1alpha1.AllocationAllocated,
		}
		if !d.allocated {
			s.Status = networkingv1alpha1.AllocationUnavailable
			s.Message = unavailableMessage(d.holderPrefix, d.holder)
			unavailable = append(unavailable, s)
		}
		status.AddressSpace = append(status.AddressSpace, s)
	}
	ready := metav1.Condition{
		Type:               networkingv1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             reasonAllocated,
		Message:            fmt.Sprintf("all %d prefixes are allocated", len(status.AddressSpace)),
		ObservedGeneration: generation,
	}
	if len(unavailable) > 0 {
		ready.Status, ready.Reason = metav1.ConditionFalse, networkingv1alpha1.ReasonConflict
		ready.Message = fmt.Sprintf("%d of %d prefixes unavailable: %s %s", len(unavailable), len(status.AddressSpace), unavailable[0].Prefix, unavailable[0].Message)
		if len(unavailable) > 1 {
			ready.Message += fmt.Sprintf("; and %d more", len(unavailable)-1)
		}
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	return status
}
