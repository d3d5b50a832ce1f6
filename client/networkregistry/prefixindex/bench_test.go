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

// BenchmarkContaining is WhoHas for an address.
func BenchmarkContaining(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		prefixes := generate(n)
		x := &Index[int]{}
		for i, p := range prefixes {
			x.Insert(p, i)
		}
		addrs := make([]netip.Addr, 1024)
		for i := range addrs {
			addrs[i] = netip.AddrFrom4([4]byte{10, byte(i * 7), byte(i * 13), 5})
		}
		b.Run(fmt.Sprintf("trie/records=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				for range x.Containing(addrs[i%len(addrs)]) {
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("linear/records=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				a := addrs[i%len(addrs)]
				for _, p := range prefixes {
					if p.Contains(a) {
						break
					}
				}
				i++
			}
		})
	}
}

// linearOverlaps is the baseline: every allocation is compared.
func linearOverlaps(prefixes []netip.Prefix, q netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}
