package registrycli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// benchClaims is make bench's allocation layout, decided: a delegable
// 10.0.0.0/8, n/2 claims of a /24 from it, and n/2 exact IPv6 /64s, a
// tenth of which wait on a conflict with another's /48.
func benchClaims(n int) []*v1alpha1.NetworkClaim {
	length := int32(24)
	pool := &v1alpha1.ClaimedPrefix{Claim: "pool", Prefix: "10.0.0.0/8"}
	out := []*v1alpha1.NetworkClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: "10.0.0.0/8", Delegable: true}}},
		Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
			Prefix: "10.0.0.0/8", Delegable: true, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt,
			Pool: &v1alpha1.PoolStatus{Addresses: "16777216", Allocated: fmt.Sprint(256 * (n / 2)), Reserved: "0", Cooling: "0",
				Free: fmt.Sprint(16777216 - 256*(n/2)), SubPrefixes: int32(n / 2), Tenants: int32(n / 2)},
		}}},
	}}
	for i := range n / 2 {
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String()
		out = append(out, &v1alpha1.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pooled-%06d", i)},
			Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Name: "pool", From: &v1alpha1.PrefixSource{Claim: "pool"}, PrefixLength: &length}}},
			Status: v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{{
				Name: "pool", Prefix: prefix, Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt, DelegatedFrom: pool,
			}}},
		})
	}
	for i := range n / 2 {
		group, index := i/1000, i%1000
		p := netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 4: byte(group >> 8), byte(group), byte(index >> 8), byte(index)}), 64)
		status := v1alpha1.AddressSpaceStatus{Prefix: p.String(), Status: v1alpha1.AllocationAllocated, Date: registryDecidedAt}
		if index%10 == 9 {
			p = netip.PrefixFrom(p.Addr(), 48).Masked()
			status = v1alpha1.AddressSpaceStatus{Prefix: p.String(), Status: v1alpha1.AllocationUnavailable, Date: registryDecidedAt, Reason: v1alpha1.ReasonConflict,
				ConflictsWith: &v1alpha1.ClaimedPrefix{Claim: fmt.Sprintf("present-%06d", i-9), Prefix: "fd00::/64"}}
		}
		out = append(out, &v1alpha1.NetworkClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("present-%06d", i)},
			Spec:       v1alpha1.NetworkClaimSpec{AddressSpace: []v1alpha1.AddressSpaceRecord{{Prefix: p.String()}}},
			Status:     v1alpha1.NetworkClaimStatus{AddressSpace: []v1alpha1.AddressSpaceStatus{status}},
		})
	}
	return out
}

// What registry ui's server pays with make bench's 100,000 claims: a view
// built after a change (it follows a stream of changes at most every two
// builds' time), and the requests of the page's first view.
func BenchmarkUIView(b *testing.B) {
	client := fake.NewSimpleClientset()
	for _, c := range benchClaims(100_000) {
		if err := client.Tracker().Add(c); err != nil {
			b.Fatal(err)
		}
	}
	r, err := networkregistry.Snapshot(b.Context(), client)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			buildView(r, 1)
		}
	})
	s := newUIServer("https://127.0.0.1:6443", nil, nil, []string{"127.0.0.1"})
	s.publish(buildView(r, 1))
	h := s.handler()
	for _, path := range []string{"/api/overview", "/api/nodes", "/api/waiting", "/api/nodes?claim=pool&prefix=10.0.0.0/8"} {
		b.Run("GET "+path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8001"+path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d", path, rec.Code)
				}
			}
		})
	}
}
