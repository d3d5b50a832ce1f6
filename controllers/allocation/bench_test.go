package allocation

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	kubefake "k8s.io/client-go/kubernetes/fake"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/fake"
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

// pool50k is a ledger holding a delegable 10.0.0.0/8 with 50,000 /24s taken
// from it first fit, as in hack/bench/allocation, and that pool's record.
func pool50k(b *testing.B) (*ledger, *record) {
	b.Helper()
	l := testLedger()
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable()))
	for i := range 50_000 {
		l.sync(spec(fmt.Sprintf("c%d", i), uint64(i+2), pool("p", "org", 24)))
	}
	return l, l.claims["org"].records[exact("10.0.0.0/8").key]
}

// BenchmarkPoolUsageOf50k reads the figures of a /8 with 50,000 /24s taken
// from it: what a status write of the pool's claim costs under the
// controller's lock, from the kept counts and a search of its largest free
// block.
func BenchmarkPoolUsageOf50k(b *testing.B) {
	l, pool := pool50k(b)
	for b.Loop() {
		if u := l.usageOf(pool); u.subPrefixes != 50_000 {
			b.Fatalf("%d sub-prefixes", u.subPrefixes)
		}
	}
}

// BenchmarkPoolUsageLowHoleOf50k is BenchmarkPoolUsageOf50k with the pool's
// lowest /24 released: the largest free block's search starts at the full
// mark, now at the bottom of the pool, and walks the 50,000 /24s above it
// to the free space at their end. A status write pays this once a second at
// most while the pool changes, for as long as the hole stays free.
func BenchmarkPoolUsageLowHoleOf50k(b *testing.B) {
	l, pool := pool50k(b)
	l.forget("c0", "")
	for b.Loop() {
		if u := l.usageOf(pool); u.subPrefixes != 49_999 || u.largestFree != netip.MustParsePrefix("10.224.0.0/11") {
			b.Fatalf("%d sub-prefixes, largest free %s", u.subPrefixes, u.largestFree)
		}
	}
}

// BenchmarkPoolRecountOf50k counts the same pool from scratch, walking
// every /24: what each status write of a changed pool cost before the
// counts were kept (at most once a second), and what the ledger now pays
// only when a record becomes a pool.
func BenchmarkPoolRecountOf50k(b *testing.B) {
	l, pool := pool50k(b)
	for b.Loop() {
		if u := l.countUsage(pool); u.subPrefixes != 50_000 {
			b.Fatalf("%d sub-prefixes", u.subPrefixes)
		}
	}
}

// BenchmarkPoolChangeOf50k is one /24 taken first fit from that pool and
// released, with the pool's counts kept: the decider's cost of a change.
func BenchmarkPoolChangeOf50k(b *testing.B) {
	l, _ := pool50k(b)
	s := spec("new", 1<<30, pool("p", "org", 24))
	for b.Loop() {
		if ch := l.sync(s); len(ch) != 1 || ch[0].kind != changeAllocated {
			b.Fatalf("changes %v", formatChanges(ch))
		}
		l.forget("new", "")
	}
}

// BenchmarkPoolChangeWithPolicyOf50k is BenchmarkPoolChangeOf50k in a pool
// with two reservations, a 1 h reuse grace period and a full cooling list:
// each release cools its /24 and pushes the oldest cooling one off the
// list, which first fit takes next.
func BenchmarkPoolChangeWithPolicyOf50k(b *testing.B) {
	l, _ := pool50k(b)
	policy := poolPolicy{grace: time.Hour, reserved: prefixes("10.250.0.0/16", "10.251.0.0/24")}
	l.sync(spec("org", 2, exact("10.0.0.0/8").delegable().withPolicy(policy)))
	for i := range validation.MaxCoolingPrefixes {
		name := fmt.Sprintf("cooled%d", i)
		l.sync(spec(name, uint64(100_000+i), pool("p", "org", 24)))
		l.forget(name, "")
	}
	org := l.claims["org"].records[exact("10.0.0.0/8").key]
	if n := len(l.cooling[org]); n != validation.MaxCoolingPrefixes {
		b.Fatalf("%d cooling prefixes", n)
	}
	s := spec("new", 1<<30, pool("p", "org", 24))
	for b.Loop() {
		if ch := l.sync(s); len(ch) != 1 || ch[0].kind != changeAllocated {
			b.Fatalf("changes %v", formatChanges(ch))
		}
		l.forget("new", "")
	}
}

// writtenClaims are n claims laid out as hack/bench/allocation fills the
// registry, with the status the controller wrote for them: a delegable
// 10.0.0.0/8, half of the others /24s taken from it, the rest IPv6 /64s of
// which every tenth claims its group's /48 over the /64s of others, and so
// waits.
func writtenClaims(b *testing.B, n int) []*networkingv1alpha1.NetworkClaim {
	b.Helper()
	l := testLedger()
	specs := []claimSpec{spec("pool-v4", 1, exact("10.0.0.0/8").delegable())}
	for i := range n - 1 {
		rv := uint64(i + 2)
		if i%2 == 0 {
			specs = append(specs, spec(fmt.Sprintf("pooled-%06d", i), rv, pool("pods", "pool-v4", 24)))
			continue
		}
		e := i / 2
		addr := netip.AddrFrom16([16]byte{0xfd, 4: byte(e >> 16), byte(e >> 8), byte(e), 7: 0})
		prefix := netip.PrefixFrom(addr, 64)
		if e%10 == 9 {
			prefix = netip.PrefixFrom(addr, 48).Masked()
		}
		specs = append(specs, spec(fmt.Sprintf("present-%06d", i), rv, exact(prefix.String())))
	}
	out := make([]*networkingv1alpha1.NetworkClaim, 0, len(specs))
	for _, s := range specs {
		l.sync(s)
	}
	for _, s := range specs {
		claim := claimOf(s)
		generation, decisions, _ := l.records(s.name, claim.UID)
		claim.Status = desiredStatus(claim, generation, decisions)
		out = append(out, claim)
	}
	return out
}

// BenchmarkRestart is the allocator's work at a restart with 100,000
// claims whose status is right: the ledger rebuilt from the informer's
// cache, then the status checks the rebuild queued, none of which finds
// a status to write.
func BenchmarkRestart(b *testing.B) {
	claims := writtenClaims(b, 100_000)
	ctx := b.Context()
	for b.Loop() {
		b.StopTimer()
		client := fake.NewSimpleClientset()
		informer := newInformerFactory(client).Networking().V1alpha1().NetworkClaims()
		c := NewController(ctx, informer, client, kubefake.NewClientset(), "bench")
		indexer := informer.Informer().GetIndexer()
		for _, claim := range claims {
			if err := indexer.Add(claim); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		c.queueChecks(c.restore(ctx))
		checks := c.checks.Len()
		for c.checks.Len() > 0 {
			c.checkNext(ctx)
		}
		for c.statuses.Len() > 0 {
			name, _ := c.statuses.Get()
			if err := c.writeStatus(ctx, name); err != nil {
				b.Fatal(err)
			}
			c.statuses.Done(name)
		}
		b.ReportMetric(float64(checks), "checks/op")
		if actions := client.Actions(); len(actions) > 0 {
			b.Fatalf("the restart wrote: %v", actions[0])
		}
	}
}
