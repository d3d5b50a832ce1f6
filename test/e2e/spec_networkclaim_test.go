package e2e

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// specAddressSpace is where the NetworkClaim specs claim: TEST-NET-2
// (RFC 5737), which no real network uses, so a spec run against a real
// registry cannot take anyone's range.
var specAddressSpace = netip.MustParsePrefix("198.51.100.0/24")

// The registry's answers as a component sees them through the
// networkregistry library: a claim on free space is Allocated and Ready; a
// second claim overlapping it is Unavailable with reason Conflict, naming
// the holder in conflictsWith; when the holder is deleted, the waiting
// claim gets the space.
func TestSpecNetworkClaim(t *testing.T) {
	onEveryProvider(t, func(t *testing.T, c *Cluster) {
		ctx := t.Context()
		cfg := restConfig(t, c)
		r, err := networkregistry.NewForConfig(cfg, "e2e-spec")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		claims := versioned.NewForConfigOrDie(cfg).NetworkingV1alpha1().NetworkClaims()
		holder, waiter := uniqueName("e2e-spec-holder"), uniqueName("e2e-spec-waiter")
		t.Cleanup(func() {
			for _, name := range []string{holder, waiter} {
				// Not t.Context(): it is done by now.
				if err := claims.Delete(context.Background(), name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
					t.Errorf("deleting NetworkClaim %s: %v", name, err)
				}
			}
		})
		block := freeBlock(t, r, specAddressSpace, 28)
		inner := netip.PrefixFrom(block.Addr(), 29)
		waitCtx, cancel := context.WithTimeout(ctx, specTimeout)
		defer cancel()

		// Allocate.
		if _, err := r.Claim(ctx, holder, []networkregistry.Record{{Prefix: block, Description: "e2e spec holder"}}); err != nil {
			t.Fatal(err)
		}
		claim, err := r.WaitForAllocation(waitCtx, holder)
		if err != nil {
			t.Fatalf("%s claims free %s: %v", holder, block, err)
		}
		if got := claim.Status.AddressSpace; len(got) != 1 || got[0].Prefix != block.String() || got[0].Status != v1alpha1.AllocationAllocated {
			t.Errorf("%s's status records: %+v; want %s Allocated", holder, got, block)
		}
		expectReady(t, claim, metav1.ConditionTrue, "Allocated")
		expectHolder(t, r, inner.Addr(), holder)

		// Conflict.
		if _, err := r.Claim(ctx, waiter, []networkregistry.Record{{Prefix: inner, Description: "e2e spec waiter"}}); err != nil {
			t.Fatal(err)
		}
		claim, err = r.WaitForAllocation(waitCtx, waiter)
		var unavailable *networkregistry.UnavailableError
		if !errors.As(err, &unavailable) {
			t.Fatalf("%s claims %s inside %s's %s: want an UnavailableError, got %v", waiter, inner, holder, block, err)
		}
		want := v1alpha1.ClaimedPrefix{Claim: holder, Prefix: block.String()}
		if got := unavailable.Records; len(got) != 1 || got[0].Prefix != inner.String() || got[0].Status != v1alpha1.AllocationUnavailable ||
			got[0].Reason != v1alpha1.ReasonConflict || got[0].ConflictsWith == nil || *got[0].ConflictsWith != want {
			t.Errorf("%s's unavailable records: %+v; want %s Unavailable, reason Conflict, conflictsWith %+v", waiter, got, inner, want)
		}
		expectReady(t, claim, metav1.ConditionFalse, v1alpha1.ReasonConflict)
		expectHolder(t, r, inner.Addr(), holder)

		// Release: the waiter gets the space once the holder is deleted.
		if err := claims.Delete(ctx, holder, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, waiter+" is allocated "+inner.String(), func(ctx context.Context) (bool, error) {
			claim, err = claims.Get(ctx, waiter, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			p, ok := networkregistry.Decisions(claim)[0].Allocated()
			return ok && p == inner, nil
		})
		expectReady(t, claim, metav1.ConditionTrue, "Allocated")
		eventually(t, "the registry's index says "+waiter+" holds "+inner.Addr().String(), func(context.Context) (bool, error) {
			got := r.Overlaps(netip.PrefixFrom(inner.Addr(), inner.Addr().BitLen()))
			return len(got) == 1 && got[0].Claim == waiter, nil
		})
	})
}

// freeBlock is the first prefix of length bits in space that no NetworkClaim
// holds or asks for: a spec run against a registry that others use (or
// that an earlier run left claims in) claims only space nobody wants.
func freeBlock(t *testing.T, r *networkregistry.Registry, space netip.Prefix, bits int) netip.Prefix {
	t.Helper()
	wanted := func(p netip.Prefix) bool {
		if len(r.Overlaps(p)) > 0 {
			return true
		}
		for _, c := range r.Claims() {
			for _, record := range c.Spec.AddressSpace {
				if q, err := netip.ParsePrefix(record.Prefix); err == nil && q.Overlaps(p) {
					return true
				}
			}
		}
		return false
	}
	for p := netip.PrefixFrom(space.Addr(), bits); space.Contains(p.Addr()); p = nextPrefix(p) {
		if !wanted(p) {
			return p
		}
	}
	t.Fatalf("every /%d of %s is claimed: delete the NetworkClaims named e2e-spec-* that earlier runs left", bits, space)
	return netip.Prefix{}
}

// nextPrefix is the prefix of p's length right after p; its address is
// invalid after the last prefix of the family.
func nextPrefix(p netip.Prefix) netip.Prefix {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	last, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(last.Next(), p.Bits())
}

// expectReady checks the claim's Ready condition.
func expectReady(t *testing.T, claim *v1alpha1.NetworkClaim, status metav1.ConditionStatus, reason string) {
	t.Helper()
	cond := meta.FindStatusCondition(claim.Status.Conditions, v1alpha1.ConditionReady)
	if cond == nil || cond.Status != status || cond.Reason != reason {
		t.Errorf("NetworkClaim %s: Ready condition %+v; want %s with reason %s", claim.Name, cond, status, reason)
	}
}

// expectHolder checks that the registry says addr is held by claim alone.
func expectHolder(t *testing.T, r *networkregistry.Registry, addr netip.Addr, claim string) {
	t.Helper()
	got, err := r.WhoHas(addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Claim != claim {
		t.Errorf("registry: who has %s: %+v; want %s alone", addr, got, claim)
	}
}
