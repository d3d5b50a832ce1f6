package allocation

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
)

func TestPoolStatus(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pool  recordSpec
		steps []claimSpec
		want  networkingv1alpha1.PoolStatus
		// wantPressure is the PoolPressure condition's reason.
		wantPressure string
	}{{
		name: "an IPv6 /32: counts past 64 bits",
		pool: exact("fd00::/32").delegable().withPolicy(poolPolicy{reserved: prefixes("fd00:0:ffff::/48")}),
		steps: []claimSpec{
			spec("a", 2, pool("p", "org", 48)),
			spec("b", 3, pool("p", "org", 48), pool("q", "org", 64)),
		},
		want: networkingv1alpha1.PoolStatus{
			Addresses:         "79228162514264337593543950336", // 2^96
			Allocated:         "2417870085973332058963968",     // 2 × 2^80 + 2^64
			Reserved:          "1208925819614629174706176",     // 2^80
			Cooling:           "0",
			Free:              "79224535718358749632310280192", // the rest
			LargestFreePrefix: "fd00:0:4000::/34",              // the /33 above holds the reservation
			SubPrefixes:       3,
			Tenants:           2,
		},
		wantPressure: networkingv1alpha1.ReasonBelow80Percent,
	}, {
		name:  "an IPv4 /24 past 80%: nested allocations count once",
		pool:  exact("10.0.0.0/24").delegable(),
		steps: []claimSpec{spec("a", 2, pool("p", "org", 25).delegable()), spec("b", 3, pool("p", "a", 26)), spec("c", 4, pool("p", "org", 27))},
		want: networkingv1alpha1.PoolStatus{
			Addresses: "256", Allocated: "160", Reserved: "0", Cooling: "0", Free: "96", UsedPercent: 62,
			LargestFreePrefix: "10.0.0.192/26", SubPrefixes: 2, Tenants: 2,
		},
		wantPressure: networkingv1alpha1.ReasonBelow80Percent,
	}, {
		name:  "cooling and reserved space is not free",
		pool:  exact("10.0.0.0/24").delegable().withPolicy(poolPolicy{grace: time.Hour, reserved: prefixes("10.0.0.128/26")}),
		steps: []claimSpec{spec("a", 2, pool("p", "org", 25)), spec("a", 3, pool("q", "org", 27)), spec("b", 4, pool("p", "org", 28))},
		want: networkingv1alpha1.PoolStatus{
			Addresses: "256", Allocated: "48", Reserved: "64", Cooling: "128", Free: "16", UsedPercent: 93,
			LargestFreePrefix: "10.0.0.240/28", SubPrefixes: 2, Tenants: 2,
			CoolingPrefixes: []networkingv1alpha1.CoolingPrefix{{Prefix: "10.0.0.0/25", Claim: "a", ReusableAt: metav1.NewTime(t0.Add(time.Hour))}},
		},
		wantPressure: networkingv1alpha1.ReasonAbove80Percent,
	}, {
		name:  "a full pool",
		pool:  exact("10.0.0.0/30").delegable(),
		steps: []claimSpec{spec("a", 2, pool("p", "org", 31), pool("q", "org", 31))},
		want: networkingv1alpha1.PoolStatus{
			Addresses: "4", Allocated: "4", Reserved: "0", Cooling: "0", Free: "0", UsedPercent: 100, SubPrefixes: 2, Tenants: 1,
		},
		wantPressure: networkingv1alpha1.ReasonAbove95Percent,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLedger()
			l.sync(spec("org", 1, tc.pool))
			for i, s := range tc.steps {
				if e, ok := l.claims[s.name]; ok {
					s.generation = e.generation + int64(i) + 1
				}
				l.sync(s)
			}
			org := &networkingv1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "org", UID: "org-uid"},
				Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{Prefix: tc.pool.req.prefix.String(), Delegable: true}}}}
			generation, decisions, _ := l.records("org", "org-uid")
			status := desiredStatus(org, generation, decisions)
			got := status.AddressSpace[0].Pool
			if got == nil {
				t.Fatalf("no pool status: %+v", status.AddressSpace[0])
			}
			if !apiequality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("pool status (-got +want):\n%s", diff.Diff(*got, tc.want))
			}
			c := meta.FindStatusCondition(status.Conditions, networkingv1alpha1.ConditionPoolPressure)
			if c == nil || c.Reason != tc.wantPressure {
				t.Errorf("PoolPressure = %+v, want reason %s", c, tc.wantPressure)
			}
		})
	}
}

// A pool's figures are kept as records come and go: its status shows the
// change at once, with no count to wait for.
func TestPoolUsageFollowsEveryChange(t *testing.T) {
	l := testLedger()
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable()))
	org := l.claims["org"].records[exact("10.0.0.0/8").key]
	if u := l.usageOf(org); u.subPrefixes != 0 || u.largestFree != netip.MustParsePrefix("10.0.0.0/8") {
		t.Fatalf("an empty pool: %d sub-prefixes, largest free %s", u.subPrefixes, u.largestFree)
	}
	l.sync(spec("a", 2, pool("p", "org", 16)))
	if u := l.usageOf(org); u.subPrefixes != 1 || u.allocated.Int64() != 1<<16 || u.largestFree != netip.MustParsePrefix("10.128.0.0/9") {
		t.Errorf("right after an allocation: %d sub-prefixes, %s allocated, largest free %s; want 1, 65536, 10.128.0.0/9", u.subPrefixes, u.allocated, u.largestFree)
	}
	l.forget("a", "")
	if u := l.usageOf(org); u.subPrefixes != 0 || u.allocated.Sign() != 0 || u.largestFree != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("right after its release: %d sub-prefixes, %s allocated, largest free %s; want 0, 0, 10.0.0.0/8", u.subPrefixes, u.allocated, u.largestFree)
	}
}

// A change of the cooling list is counted at once: the status shows the
// list and its figures together.
func TestPoolUsageAgreesWithItsCoolingList(t *testing.T) {
	now := t0
	l := newLedger(func() time.Time { return now })
	l.sync(spec("org", 1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{grace: time.Minute})))
	org := l.claims["org"].records[exact("10.0.0.0/8").key]
	l.sync(spec("a", 2, pool("p", "org", 16)))
	if u := l.usageOf(org); u.allocated.Int64() != 1<<16 {
		t.Fatalf("allocated %s, want 65536", u.allocated)
	}
	l.forget("a", "")
	if u := l.usageOf(org); u.cooling.Int64() != 1<<16 || u.allocated.Sign() != 0 || len(l.cooling[org]) != 1 {
		t.Errorf("right after a release: cooling %s, allocated %s, %d cooling prefixes; want 65536, 0, 1", u.cooling, u.allocated, len(l.cooling[org]))
	}
	now = now.Add(time.Minute)
	l.expire()
	if u := l.usageOf(org); u.cooling.Sign() != 0 || u.free.Cmp(u.size) != 0 {
		t.Errorf("after the grace period: cooling %s, free %s of %s", u.cooling, u.free, u.size)
	}
}

// A prefix pushed off a full cooling list (validation.MaxCoolingPrefixes)
// is free at once, and first fit finds it: its release lowers the pool's
// full mark to it. Once, nothing did, and a pool whose mark had passed it
// said PoolExhausted while that prefix was free.
func TestCoolingEvictionFreesForFirstFit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// waiter asks for a /25 while the pool is all allocated or
		// cooling, and waits; else a claim asks after the eviction.
		waiter bool
		// readStatus reads the pool's figures (a status write) before
		// the eviction, which moves its full mark.
		readStatus bool
	}{
		{name: "a waiter gets the evicted prefix", waiter: true},
		{name: "a later claim gets it, after a status write moved the mark", readStatus: true},
		{name: "a waiter gets it, after a status write moved the mark", waiter: true, readStatus: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLedger()
			l.sync(spec("org", 1, exact("10.0.0.0/16").delegable().withPolicy(poolPolicy{grace: time.Hour})))
			org := l.claims["org"].records[exact("10.0.0.0/16").key]
			const n = 512 // /25s in the /16: the pool is full
			rv := uint64(2)
			for i := range n {
				l.sync(spec(fmt.Sprintf("c%03d", i), rv, pool("p", "org", 25)))
				rv++
			}
			// The first 256 releases fill the cooling list.
			for i := range validation.MaxCoolingPrefixes {
				l.forget(fmt.Sprintf("c%03d", i), "")
			}
			want := netip.MustParsePrefix("10.0.0.0/25") // c000's, cooling longest
			if len(l.cooling[org]) != validation.MaxCoolingPrefixes || l.cooling[org][0].prefix != want {
				t.Fatalf("cooling list of %d, first %v; want %d, first %s", len(l.cooling[org]), l.cooling[org][0], validation.MaxCoolingPrefixes, want)
			}
			if tc.waiter {
				l.sync(spec("x", rv, pool("p", "org", 25)))
				rv++
				if r := l.claims["x"].records[pool("p", "org", 25).key]; r.allocated {
					t.Fatalf("x got %s from a pool all allocated or cooling", r.prefix)
				}
			}
			if tc.readStatus {
				if u := l.usageOf(org); u.free.Sign() != 0 {
					t.Fatalf("free %s before the eviction, want 0", u.free)
				}
			}
			// The 257th release pushes c000's /25 off the list.
			l.forget(fmt.Sprintf("c%03d", validation.MaxCoolingPrefixes), "")
			if slices.ContainsFunc(l.cooling[org], func(c cooled) bool { return c.prefix == want }) {
				t.Fatalf("%s still cools", want)
			}
			name := "x"
			if !tc.waiter {
				l.sync(spec("y", rv, pool("p", "org", 25)))
				name = "y"
			}
			r := l.claims[name].records[pool("p", "org", 25).key]
			if !r.allocated || r.prefix != want {
				t.Errorf("%s: allocated %t, prefix %s, reason %s; want %s, free since its eviction", name, r.allocated, r.prefix, r.reason, want)
			}
			checkKeptUsage(t, tc.name, l)
		})
	}
}

// The figures kept as records come and go agree with a count from scratch
// after every step, however the spans inside the pool nest: records inside
// records, allocations inside reservations, cooling taken back by its
// releaser, policies and delegation that change.
func TestKeptPoolUsage(t *testing.T) {
	org := func(r recordSpec) recordSpec { return r.delegable() }
	for _, tc := range []struct {
		name  string
		pool  recordSpec
		steps []step
		// want is the pool's usage after the last step (describeUsage).
		want string
	}{{
		name: "a pool inside the pool, and what it held after it goes",
		pool: org(exact("10.0.0.0/24")),
		steps: []step{
			{sync: spec("a", 2, pool("p", "org", 25).delegable())},
			{sync: spec("b", 3, pool("p", "a", 26))},
			{sync: spec("c", 4, pool("p", "org", 26))},
			{forget: "a"},
		},
		want: "size 256 allocated 128 reserved 0 cooling 0 free 128 largest 10.0.0.64/26 subs 1 tenants 1",
	}, {
		name: "an allocation inside a reservation, then the reservation gone",
		pool: org(exact("10.0.0.0/24")).withPolicy(poolPolicy{reserved: prefixes("10.0.0.128/25")}),
		steps: []step{
			{sync: spec("a", 2, sub("10.0.0.128/26", "org"))},
			{sync: spec("b", 3, pool("p", "org", 25))},
			{sync: spec("org", 4, org(exact("10.0.0.0/24")))},
		},
		want: "size 256 allocated 192 reserved 0 cooling 0 free 64 largest 10.0.0.192/26 subs 2 tenants 2",
	}, {
		name: "cooling taken back by its releaser, released again, and expired",
		pool: org(exact("10.0.0.0/24")).withPolicy(poolPolicy{grace: time.Hour}),
		steps: []step{
			{sync: spec("a", 2, pool("p", "org", 25))},
			{sync: spec("b", 3, pool("p", "org", 26))},
			{forget: "a"},
			{sync: spec("c", 4, pool("p", "org", 26))},
			{sync: spec("a", 5, sub("10.0.0.0/26", "org"))},
			{forget: "a"},
			{advance: time.Hour},
		},
		want: "size 256 allocated 128 reserved 0 cooling 0 free 128 largest 10.0.0.0/25 subs 2 tenants 2",
	}, {
		name: "a pool made not delegable and delegable again",
		pool: org(exact("10.0.0.0/24")),
		steps: []step{
			{sync: spec("a", 2, pool("p", "org", 25))},
			{sync: spec("org", 3, exact("10.0.0.0/24"))},
			{sync: spec("org", 4, org(exact("10.0.0.0/24")))},
		},
		want: "size 256 allocated 128 reserved 0 cooling 0 free 128 largest 10.0.0.128/25 subs 1 tenants 1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			l := newLedger(func() time.Time { return now })
			l.sync(spec("org", 1, tc.pool))
			checkKeptUsage(t, "the pool alone", l)
			for i, s := range tc.steps {
				switch {
				case s.forget != "":
					l.forget(s.forget, "")
				case s.advance > 0:
					now = now.Add(s.advance)
					l.expire()
				default:
					l.sync(s.sync)
				}
				checkKeptUsage(t, fmt.Sprintf("step %d", i), l)
			}
			pool := l.claims["org"].records[tc.pool.key]
			if got := describeUsage(l.usageOf(pool)); got != tc.want {
				t.Errorf("usage %s, want %s", got, tc.want)
			}
		})
	}
}

// A restore keeps only the cooling prefixes its figures can count: strictly
// inside the pool, canonical, and overlapping no other kept one, so that a
// bad status cannot make the pool's free count wrap around.
func TestCoolingInside(t *testing.T) {
	at := func(s string, claim string) cooled {
		return cooled{prefix: netip.MustParsePrefix(s), claim: claim, until: t0}
	}
	for _, tc := range []struct {
		name     string
		list     []cooled
		want     []cooled
		prefixes []netip.Prefix
	}{{
		name:     "good entries stay, in the list's order",
		list:     []cooled{at("10.0.1.0/24", "a"), at("10.0.0.0/24", "b")},
		want:     []cooled{at("10.0.1.0/24", "a"), at("10.0.0.0/24", "b")},
		prefixes: prefixes("10.0.0.0/24", "10.0.1.0/24"),
	}, {
		name:     "the pool itself, larger or outside: dropped",
		list:     []cooled{at("10.0.0.0/16", "a"), at("10.0.0.0/8", "b"), at("11.0.0.0/24", "c"), at("fd00::/64", "d"), at("10.0.2.0/24", "e")},
		want:     []cooled{at("10.0.2.0/24", "e")},
		prefixes: prefixes("10.0.2.0/24"),
	}, {
		name:     "not canonical: dropped",
		list:     []cooled{at("10.0.3.1/24", "a")},
		prefixes: nil,
	}, {
		name:     "overlapping: the outer one stays, a duplicate once",
		list:     []cooled{at("10.0.4.0/25", "a"), at("10.0.4.0/24", "b"), at("10.0.4.128/25", "c"), at("10.0.4.0/24", "d")},
		want:     []cooled{at("10.0.4.0/24", "b")},
		prefixes: prefixes("10.0.4.0/24"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, prefixes := coolingInside(netip.MustParsePrefix("10.0.0.0/16"), tc.list)
			if !slices.Equal(got, tc.want) || !slices.Equal(prefixes, tc.prefixes) {
				t.Errorf("coolingInside = %v, %v; want %v, %v", got, prefixes, tc.want, tc.prefixes)
			}
		})
	}
}
