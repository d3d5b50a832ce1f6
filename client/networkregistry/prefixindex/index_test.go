package prefixindex

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

type pair struct {
	Prefix string
	Holder string
}

func collect(seq func(func(netip.Prefix, string) bool)) []pair {
	var out []pair
	for p, h := range seq {
		out = append(out, pair{p.String(), h})
	}
	return out
}

func newIndex(entries ...pair) *Index[string] {
	x := &Index[string]{}
	for _, e := range entries {
		x.Insert(netip.MustParsePrefix(e.Prefix), e.Holder)
	}
	return x
}

func TestOverlapping(t *testing.T) {
	x := newIndex(
		pair{"10.0.0.0/8", "a"},
		pair{"10.96.0.0/12", "b"},
		pair{"10.96.0.0/12", "c"},
		pair{"10.96.1.0/24", "d"},
		pair{"10.97.0.0/16", "e"},
		pair{"192.168.0.0/16", "f"},
		pair{"fd00::/8", "g"},
		pair{"fd00:10:96::/112", "h"},
	)
	tests := []struct {
		query string
		want  []pair
	}{
		{"10.96.0.0/12", []pair{{"10.0.0.0/8", "a"}, {"10.96.0.0/12", "b"}, {"10.96.0.0/12", "c"}, {"10.96.1.0/24", "d"}, {"10.97.0.0/16", "e"}}},
		{"10.96.1.128/25", []pair{{"10.0.0.0/8", "a"}, {"10.96.0.0/12", "b"}, {"10.96.0.0/12", "c"}, {"10.96.1.0/24", "d"}}},
		{"0.0.0.0/0", []pair{{"10.0.0.0/8", "a"}, {"10.96.0.0/12", "b"}, {"10.96.0.0/12", "c"}, {"10.96.1.0/24", "d"}, {"10.97.0.0/16", "e"}, {"192.168.0.0/16", "f"}}},
		// An address, as WhoHas asks: the prefixes that contain it.
		{"10.96.1.7/32", []pair{{"10.0.0.0/8", "a"}, {"10.96.0.0/12", "b"}, {"10.96.0.0/12", "c"}, {"10.96.1.0/24", "d"}}},
		{"fd00:10:96::1/128", []pair{{"fd00::/8", "g"}, {"fd00:10:96::/112", "h"}}},
		{"11.0.0.0/8", nil},
		{"11.1.2.3/32", nil},
		{"172.16.0.0/12", nil},
		{"fd00:10:96::/64", []pair{{"fd00::/8", "g"}, {"fd00:10:96::/112", "h"}}},
		{"fc00::/8", nil},
		// IPv4 never overlaps IPv6, not even the IPv4-mapped range.
		{"::ffff:10.0.0.0/104", nil},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			got := collect(x.Overlapping(netip.MustParsePrefix(tc.query)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("Overlapping(%s) = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

func TestInsertDelete(t *testing.T) {
	x := &Index[string]{}
	p := netip.MustParsePrefix("10.96.0.0/12")
	x.Insert(p, "a")
	x.Insert(p, "a") // idempotent
	// Not masked: stored under its network address.
	x.Insert(netip.MustParsePrefix("10.96.1.2/12"), "b")
	if got, want := x.Holders(p), []string{"a", "b"}; !slices.Equal(got, want) || x.Len() != 2 {
		t.Fatalf("after inserts: holders %v (len %d), want %v (len 2)", got, x.Len(), want)
	}
	if x.Delete(p, "c") {
		t.Error("Delete of a holder that is not there reported true")
	}
	if !x.Delete(p, "a") || !slices.Equal(x.Holders(p), []string{"b"}) || x.Len() != 1 {
		t.Fatalf("after deleting a: holders %v, len %d; want [b], 1", x.Holders(p), x.Len())
	}
	if !x.Delete(p, "b") || x.Len() != 0 || collect(x.All()) != nil {
		t.Fatalf("after deleting b: len %d, all %v; want empty", x.Len(), collect(x.All()))
	}
	if x.Delete(p, "b") {
		t.Error("second Delete reported true")
	}
}

func TestAllIsSorted(t *testing.T) {
	x := newIndex(pair{"fd00::/8", "g"}, pair{"192.168.0.0/16", "f"}, pair{"10.96.0.0/12", "b"}, pair{"10.0.0.0/8", "a"})
	want := []pair{{"10.0.0.0/8", "a"}, {"10.96.0.0/12", "b"}, {"192.168.0.0/16", "f"}, {"fd00::/8", "g"}}
	if got := collect(x.All()); !slices.Equal(got, want) {
		t.Errorf("All() = %v, want %v", got, want)
	}
}

// TestOverlappingMatchesLinearScan checks the trie against the definition,
// on a few thousand generated prefixes.
func TestOverlappingMatchesLinearScan(t *testing.T) {
	prefixes := generate(3000)
	x := &Index[int]{}
	for i, p := range prefixes {
		x.Insert(p, i)
	}
	for _, q := range queries(200) {
		want := map[int]bool{}
		for i, p := range prefixes {
			if p.Overlaps(q) {
				want[i] = true
			}
		}
		got := map[int]bool{}
		for p, i := range x.Overlapping(q) {
			if !p.Overlaps(q) || got[i] {
				t.Fatalf("Overlapping(%s) yielded %s (holder %d) wrongly or twice", q, p, i)
			}
			got[i] = true
		}
		if len(got) != len(want) {
			t.Fatalf("Overlapping(%s): %d results, linear scan finds %d", q, len(got), len(want))
		}
	}
}

// generate returns n distinct, non-overlapping prefixes, like a ledger of
// allocations: IPv4 /24s out of 10.0.0.0/8 and, every fourth, an IPv6 /64.
func generate(n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := range n {
		if i%4 == 3 {
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("fd00:%x:%x::/64", i>>16, i&0xffff)))
			continue
		}
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24))
	}
	return out
}

// queries mixes hits and misses of several lengths.
func queries(n int) []netip.Prefix {
	out := make([]netip.Prefix, 0, n)
	for i := range n {
		switch i % 4 {
		case 0:
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i * 7), byte(i * 13), 0}), 26))
		case 1:
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i * 11), 0, 0}), 16))
		case 2:
			out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16, byte(i), 0}), 24))
		default:
			out = append(out, netip.MustParsePrefix(fmt.Sprintf("fd00:0:%x::/48", i)))
		}
	}
	return out
}
