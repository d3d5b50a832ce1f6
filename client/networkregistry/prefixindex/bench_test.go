package prefixindex

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkOverlaps compares the question the allocation controller asks for
// every claimed prefix, "does anything allocated overlap it?", answered by
// the trie and by a linear scan over the same allocations.
func BenchmarkOverlaps(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		prefixes := generate(n)
		qs := queries(1024)
		x := &Index[int]{}
		for i, p := range prefixes {
			x.Insert(p, i)
		}
		b.Run(fmt.Sprintf("trie/records=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				for range x.Overlapping(qs[i%len(qs)]) {
					break
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("linear/records=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				linearOverlaps(prefixes, qs[i%len(qs)])
				i++
			}
		})
	}
}

// BenchmarkWhoHasAddress is what WhoHas does for an address: the prefixes
// that overlap the address's full-length prefix (those that contain it),
// all of them, from the trie and by a linear scan over the same allocations.
func BenchmarkWhoHasAddress(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		prefixes := generate(n)
		x := &Index[int]{}
		for i, p := range prefixes {
			x.Insert(p, i)
		}
		addrs := make([]netip.Prefix, 1024)
		for i := range addrs {
			a := netip.AddrFrom4([4]byte{10, byte(i * 7), byte(i * 13), 5})
			addrs[i] = netip.PrefixFrom(a, a.BitLen())
		}
		b.Run(fmt.Sprintf("trie/records=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				for range x.Overlapping(addrs[i%len(addrs)]) {
				}
				i++
			}
		})
		// WhoHas returns every holder: the scan cannot stop at the first.
		b.Run(fmt.Sprintf("linear/records=%d", n), func(b *testing.B) {
			i, found := 0, 0
			for b.Loop() {
				q := addrs[i%len(addrs)]
				for _, p := range prefixes {
					if p.Overlaps(q) {
						found++
					}
				}
				i++
			}
			sink = found
		})
	}
}

// sink keeps the compiler from dropping a benchmark's work.
var sink int

// linearOverlaps is the baseline: every allocation is compared.
func linearOverlaps(prefixes []netip.Prefix, q netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}
