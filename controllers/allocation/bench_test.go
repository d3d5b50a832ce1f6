package allocation

import (
	"fmt"
	"net/netip"
	"testing"
)

// BenchmarkDecideExact is one exact record decided and released with
// 10,000 other claims' allocations in the ledger.
func BenchmarkDecideExact(b *testing.B) {
	l := testLedger()
	for i := range 10_000 {
		l.sync(spec(fmt.Sprintf("c%d", i), uint64(i+1), exact(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24).String())))
	}
	s := spec("new", 1<<30, exact("11.0.0.0/24"))
	b.ResetTimer()
	for range b.N {
		l.sync(s)
		l.forget("new", "")
	}
}

// BenchmarkDecidePoolNearlyFull is one /16 taken first fit from a /8 whose
// other 255 /16s are taken, then released.
func BenchmarkDecidePoolNearlyFull(b *testing.B) {
	l := testLedger()
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable()))
	for i := range 255 {
		l.sync(spec(fmt.Sprintf("c%d", i), uint64(i+2), pool("p", "org", 16)))
	}
	s := spec("new", 1<<30, pool("p", "org", 16))
	b.ResetTimer()
	for range b.N {
		if ch := l.sync(s); len(ch) != 1 || ch[0].kind != changeAllocated || ch[0].prefix != netip.MustParsePrefix("10.255.0.0/16") {
			b.Fatalf("changes %v", formatChanges(ch))
		}
		l.forget("new", "")
	}
}

// BenchmarkDecidePoolOf100k is one /32 taken first fit from a pool with
// 100,000 sub-prefixes taken (the lowest ones, so first fit walks them all).
func BenchmarkDecidePoolOf100k(b *testing.B) {
	l := testLedger()
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable()))
	for i := range 100_000 {
		l.sync(spec(fmt.Sprintf("c%d", i), uint64(i+2), pool("p", "org", 32)))
	}
	s := spec("new", 1<<30, pool("p", "org", 32))
	b.ResetTimer()
	for range b.N {
		l.sync(s)
		l.forget("new", "")
	}
}

// BenchmarkPoolUsageOf50k counts a /8 with 50,000 /24s taken from it: what
// a status write of the pool's claim costs once the pool changed.
func BenchmarkPoolUsageOf50k(b *testing.B) {
	l := testLedger()
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable()))
	for i := range 50_000 {
		l.sync(spec(fmt.Sprintf("c%d", i), uint64(i+2), pool("p", "org", 24)))
	}
	pool := l.claims["org"].records[exact("10.0.0.0/8").key]
	b.ResetTimer()
	for range b.N {
		if u := l.countUsage(pool); u.subPrefixes != 50_000 {
			b.Fatalf("%d sub-prefixes", u.subPrefixes)
		}
	}
}
