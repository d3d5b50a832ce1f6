package allocation

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
)

// t0 is the fake clock's time.
var t0 = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func testLedger() *ledger { return newLedger(func() time.Time { return t0 }) }

// spec is claim name at resourceVersion rv (and generation rv: each write
// of these tests changes the spec), with uid name-uid.
func spec(name string, rv uint64, records ...recordSpec) claimSpec {
	for i := range records {
		records[i].index = i
	}
	return claimSpec{name: name, uid: types.UID(name + "-uid"), generation: int64(rv), resourceVersion: rv, records: records}
}

func exact(p string) recordSpec {
	prefix := netip.MustParsePrefix(p)
	return recordSpec{key: networkingv1alpha1.RecordKey{Prefix: prefix.String()}, req: request{prefix: prefix, length: -1}}
}

// sub is prefix p taken from claim from.
func sub(p, from string) recordSpec {
	r := exact(p)
	r.req.from = from
	return r
}

// pool is the record name asking for a /length from claim from.
func pool(name, from string, length int) recordSpec {
	return recordSpec{key: networkingv1alpha1.RecordKey{Name: name}, req: request{from: from, length: length}}
}

func (r recordSpec) delegable() recordSpec {
	r.req.delegable = true
	return r
}

func (r recordSpec) in(p string) recordSpec {
	r.req.pool = netip.MustParsePrefix(p)
	return r
}

// state renders every record of the ledger as "claim/key" →
// "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)" or "PoolExhausted: no
// free /16 in ...".
func state(l *ledger) map[string]string {
	out := map[string]string{}
	for name, e := range l.claims {
		_, decisions, _ := l.records(name, e.uid)
		for _, d := range decisions {
			var s string
			switch {
			case d.allocated && d.parent.claim != "":
				s = fmt.Sprintf("Allocated %s (from %s %s)", d.prefix, d.parent.claim, d.parent.prefix)
			case d.allocated:
				s = "Allocated " + d.prefix.String()
			default:
				s = d.reason + ": " + unavailableMessage(d.reason, d.prefix, d.req.length, d.holder, d.detail)
			}
			out[name+"/"+d.key.String()] = s
		}
	}
	return out
}

// step is a sync of a claim, or with forget set, its deletion, or with
// advance set, the clock moving on (and the grace periods that end).
type step struct {
	sync    claimSpec
	forget  string
	advance time.Duration
}

// withPolicy gives a delegable record a pool policy.
func (r recordSpec) withPolicy(p poolPolicy) recordSpec {
	slices.SortFunc(p.reserved, comparePrefixes)
	r.policy = &p
	return r
}

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

func TestLedgerDecisions(t *testing.T) {
	org := func(rv uint64, records ...recordSpec) step { return step{sync: spec("org", rv, records...)} }
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[string]string
	}{{
		name: "an overlap conflicts; the holder's release promotes the first waiter in etcd order",
		steps: []step{
			{sync: spec("x", 1, exact("10.0.0.0/16"))},
			{sync: spec("late", 5, exact("10.0.1.0/24"))},
			{sync: spec("early", 3, exact("10.0.0.0/20"))},
			{forget: "x"},
		},
		want: map[string]string{
			"early/10.0.0.0/20": "Allocated 10.0.0.0/20",
			"late/10.0.1.0/24":  "Conflict: overlaps 10.0.0.0/20 held by NetworkClaim early",
		},
	}, {
		name: "a sub-prefix taken from a delegable record does not conflict with it; one not taken from it does",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable()),
			{sync: spec("a", 2, sub("10.5.0.0/16", "org"))},
			{sync: spec("b", 3, exact("10.6.0.0/16"))},
			{sync: spec("c", 4, sub("10.5.128.0/17", "org"))},
		},
		want: map[string]string{
			"org/10.0.0.0/8":  "Allocated 10.0.0.0/8",
			"a/10.5.0.0/16":   "Allocated 10.5.0.0/16 (from org 10.0.0.0/8)",
			"b/10.6.0.0/16":   "Conflict: overlaps 10.0.0.0/8 held by NetworkClaim org",
			"c/10.5.128.0/17": "Conflict: overlaps 10.5.0.0/16 held by NetworkClaim a",
		},
	}, {
		name: "a record is not taken from a prefix that is not delegable",
		steps: []step{
			org(1, exact("10.0.0.0/8")),
			{sync: spec("a", 2, sub("10.5.0.0/16", "org"), pool("more", "org", 16))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/10.5.0.0/16":  "PoolNotFound: NetworkClaim org holds no allocated delegable prefix that strictly contains 10.5.0.0/16",
			"a/more":         "PoolNotFound: NetworkClaim org holds no allocated delegable prefix that can hold a /16",
		},
	}, {
		name: "pool records get the lowest free prefix, skipping what is taken, and reuse freed space first",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable()),
			{sync: spec("a", 2, pool("pods", "org", 16))},
			{sync: spec("b", 3, sub("10.1.0.0/16", "org"))},
			{sync: spec("c", 4, pool("pods", "org", 24))},
			{sync: spec("d", 5, pool("pods", "org", 15))},
			{forget: "a"},
			{sync: spec("e", 6, pool("pods", "org", 16), pool("svc", "org", 24))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"b/10.1.0.0/16":  "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
			"c/pods":         "Allocated 10.2.0.0/24 (from org 10.0.0.0/8)",
			"d/pods":         "Allocated 10.4.0.0/15 (from org 10.0.0.0/8)",
			"e/pods":         "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"e/svc":          "Allocated 10.2.1.0/24 (from org 10.0.0.0/8)",
		},
	}, {
		name: "ipv6 pools; from.prefix picks the pool; the length picks the family",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable(), exact("fd00::/32").delegable(), exact("fd01::/32").delegable()),
			{sync: spec("a", 2, pool("v6", "org", 48), pool("v4", "org", 16), pool("pinned", "org", 48).in("fd01::/32"))},
			{sync: spec("b", 3, pool("v6", "org", 48))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"org/fd00::/32":  "Allocated fd00::/32",
			"org/fd01::/32":  "Allocated fd01::/32",
			"a/v6":           "Allocated fd00::/48 (from org fd00::/32)",
			"a/v4":           "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"a/pinned":       "Allocated fd01::/48 (from org fd01::/32)",
			"b/v6":           "Allocated fd00:0:1::/48 (from org fd00::/32)",
		},
	}, {
		name: "delegation nests: iana, a regional registry, a local one, a customer",
		steps: []step{
			{sync: spec("iana", 1, exact("10.0.0.0/8").delegable())},
			{sync: spec("rir", 2, pool("block", "iana", 12).delegable())},
			{sync: spec("lir", 3, pool("block", "rir", 16).delegable())},
			{sync: spec("customer", 4, pool("net", "lir", 24))},
			{sync: spec("rir2", 5, pool("block", "iana", 12))},
			{sync: spec("squatter", 6, exact("10.0.0.0/24"))},
		},
		want: map[string]string{
			"iana/10.0.0.0/8":      "Allocated 10.0.0.0/8",
			"rir/block":            "Allocated 10.0.0.0/12 (from iana 10.0.0.0/8)",
			"lir/block":            "Allocated 10.0.0.0/16 (from rir 10.0.0.0/12)",
			"customer/net":         "Allocated 10.0.0.0/24 (from lir 10.0.0.0/16)",
			"rir2/block":           "Allocated 10.16.0.0/12 (from iana 10.0.0.0/8)",
			"squatter/10.0.0.0/24": "Conflict: overlaps 10.0.0.0/8 held by NetworkClaim iana",
		},
	}, {
		name: "an exhausted pool makes the record wait, naming the pool; freed space goes to the first waiter",
		steps: []step{
			org(1, exact("10.0.0.0/30").delegable()),
			{sync: spec("a", 2, pool("p", "org", 31))},
			{sync: spec("b", 3, pool("p", "org", 31))},
			{sync: spec("c", 4, pool("p", "org", 31))},
			{sync: spec("d", 5, pool("p", "org", 32))},
			{forget: "a"},
		},
		want: map[string]string{
			"org/10.0.0.0/30": "Allocated 10.0.0.0/30",
			"b/p":             "Allocated 10.0.0.2/31 (from org 10.0.0.0/30)",
			"c/p":             "Allocated 10.0.0.0/31 (from org 10.0.0.0/30)",
			"d/p":             "PoolExhausted: no free /32 in 10.0.0.0/30 of NetworkClaim org",
		},
	}, {
		name: "pools at the top of the address space fill up to its last address",
		steps: []step{
			org(1, exact("255.255.255.252/30").delegable(), exact("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126").delegable()),
			{sync: spec("a", 2, pool("p", "org", 31), pool("q", "org", 127).in("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126"))},
			{sync: spec("b", 3, pool("p", "org", 32), pool("q", "org", 127).in("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126"))},
			{sync: spec("c", 4, pool("p", "org", 31), pool("q", "org", 128).in("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126"))},
			{sync: spec("d", 5, pool("p", "org", 32))},
		},
		want: map[string]string{
			"org/255.255.255.252/30":                          "Allocated 255.255.255.252/30",
			"org/ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126": "Allocated ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126",
			"a/p": "Allocated 255.255.255.252/31 (from org 255.255.255.252/30)",
			"a/q": "Allocated ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/127 (from org ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126)",
			"b/p": "Allocated 255.255.255.254/32 (from org 255.255.255.252/30)",
			"b/q": "Allocated ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127 (from org ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126)",
			"c/p": "PoolExhausted: no free /31 in 255.255.255.252/30 of NetworkClaim org",
			"c/q": "PoolExhausted: no free /128 in ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/126 of NetworkClaim org",
			"d/p": "Allocated 255.255.255.255/32 (from org 255.255.255.252/30)",
		},
	}, {
		name: "records wait for a pool that does not exist yet, and get it when it is delegated",
		steps: []step{
			{sync: spec("a", 2, pool("p", "org", 16))},
			{sync: spec("b", 3, sub("10.9.0.0/16", "org"))},
			org(4, exact("10.0.0.0/8")),
			org(5, exact("10.0.0.0/8").delegable()),
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/p":            "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"b/10.9.0.0/16":  "Allocated 10.9.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "sub-prefixes outlive their pool; the pool's claim may come back, others may not",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable()),
			{sync: spec("a", 2, pool("p", "org", 16))},
			{forget: "org"},
			{sync: spec("other", 3, exact("10.0.0.0/8"))},
			{sync: claimSpec{name: "org", uid: "org-uid-2", generation: 1, resourceVersion: 4, records: []recordSpec{exact("10.0.0.0/8").delegable()}}},
			{sync: spec("b", 5, pool("p", "org", 16))},
		},
		want: map[string]string{
			"a/p":              "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"other/10.0.0.0/8": "Conflict: overlaps 10.0.0.0/16 held by NetworkClaim a",
			"org/10.0.0.0/8":   "Allocated 10.0.0.0/8",
			"b/p":              "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "a pool record that asks for another length is decided again; one that only turns delegable keeps its prefix",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable()),
			{sync: spec("a", 2, pool("p", "org", 16), pool("q", "org", 16))},
			{sync: spec("a", 3, pool("p", "org", 24), pool("q", "org", 16).delegable())},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/p":            "Allocated 10.0.0.0/24 (from org 10.0.0.0/8)",
			"a/q":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "a pool's length bounds: a record asking for a larger or smaller block waits with PoolPolicy",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{minLength: 16, maxLength: 24})),
			{sync: spec("a", 2, pool("big", "org", 12), pool("small", "org", 28), pool("ok", "org", 20))},
			{sync: spec("b", 3, sub("10.200.0.0/30", "org"))},
		},
		want: map[string]string{
			"org/10.0.0.0/8":  "Allocated 10.0.0.0/8",
			"a/big":           "PoolPolicy: a /12 is larger than pool 10.0.0.0/8 of NetworkClaim org hands out: ask for /16 to /24",
			"a/small":         "PoolPolicy: a /28 is smaller than pool 10.0.0.0/8 of NetworkClaim org hands out: ask for /16 to /24",
			"a/ok":            "Allocated 10.0.0.0/20 (from org 10.0.0.0/8)",
			"b/10.200.0.0/30": "PoolPolicy: a /30 is smaller than pool 10.0.0.0/8 of NetworkClaim org hands out: ask for /16 to /24",
		},
	}, {
		name: "records per claim: the claim's records past the limit wait, and get space when one goes",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{maxRecords: 1})),
			{sync: spec("a", 2, pool("p", "org", 16), pool("q", "org", 16))},
			{sync: spec("b", 3, pool("p", "org", 16))},
			{sync: spec("a", 4, pool("q", "org", 16))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/q":            "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"b/p":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "records per claim: the message says how many",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{maxRecords: 1})),
			{sync: spec("a", 2, pool("p", "org", 16), sub("10.9.0.0/16", "org"))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/p":            "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"a/10.9.0.0/16":  "PoolPolicy: a claim may hold at most 1 records from pool 10.0.0.0/8 of NetworkClaim org, and this one holds 1: release one, or ask the pool's holder to raise maxRecordsPerClaim",
		},
	}, {
		name: "a pool record skips a pool whose policy refuses it; a policy that changes serves the records that waited on it",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{maxLength: 24}), exact("172.16.0.0/12").delegable()),
			{sync: spec("a", 2, pool("p", "org", 28))},
			{sync: spec("b", 3, pool("p", "org", 22))},
			{sync: spec("c", 4, pool("p", "org", 28).in("10.0.0.0/8"))},
			{sync: spec("d", 5, pool("p", "org", 28).in("10.0.0.0/8"))},
			org(6, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{maxLength: 28}), exact("172.16.0.0/12").delegable()),
		},
		want: map[string]string{
			"org/10.0.0.0/8":    "Allocated 10.0.0.0/8",
			"org/172.16.0.0/12": "Allocated 172.16.0.0/12",
			"a/p":               "Allocated 172.16.0.0/28 (from org 172.16.0.0/12)",
			"b/p":               "Allocated 10.0.0.0/22 (from org 10.0.0.0/8)",
			"c/p":               "Allocated 10.0.4.0/28 (from org 10.0.0.0/8)",
			"d/p":               "Allocated 10.0.4.16/28 (from org 10.0.0.0/8)",
		},
	}, {
		name: "reservations: first fit skips them, a record that names a reserved prefix gets it",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{reserved: prefixes("10.0.0.0/16", "10.2.0.0/15")})),
			{sync: spec("a", 2, pool("p", "org", 16))},
			{sync: spec("b", 3, pool("p", "org", 16))},
			{sync: spec("gw", 4, sub("10.0.0.0/24", "org"))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/p":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
			"b/p":            "Allocated 10.4.0.0/16 (from org 10.0.0.0/8)",
			"gw/10.0.0.0/24": "Allocated 10.0.0.0/24 (from org 10.0.0.0/8)",
		},
	}, {
		name: "reuse grace period: a released sub-prefix rests; another claim's exact record waits for it, first fit skips it",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{grace: time.Minute})),
			{sync: spec("a", 2, pool("p", "org", 16))},
			{forget: "a"},
			{sync: spec("b", 3, pool("p", "org", 16))},
			{sync: spec("c", 4, sub("10.0.0.0/24", "org"))},
			{advance: 59 * time.Second},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"b/p":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
			"c/10.0.0.0/24":  "ReuseGracePeriod: 10.0.0.0/16 was released by NetworkClaim a and rests until 2026-03-01T12:01:00Z, the reuse grace period of pool 10.0.0.0/8 of NetworkClaim org",
		},
	}, {
		name: "reuse grace period: the waiter gets the prefix when the period ends",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{grace: time.Minute})),
			{sync: spec("a", 2, pool("p", "org", 16))},
			{forget: "a"},
			{sync: spec("c", 4, sub("10.0.0.0/24", "org"))},
			{advance: time.Minute},
			{sync: spec("d", 5, pool("p", "org", 16))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"c/10.0.0.0/24":  "Allocated 10.0.0.0/24 (from org 10.0.0.0/8)",
			"d/p":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "reuse grace period: the claim that released a prefix may take it back at once",
		steps: []step{
			org(1, exact("10.0.0.0/8").delegable().withPolicy(poolPolicy{grace: time.Hour})),
			{sync: spec("a", 2, sub("10.0.0.0/16", "org"))},
			{sync: spec("a", 3, sub("10.0.0.0/17", "org"))},
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/10.0.0.0/17":  "Allocated 10.0.0.0/17 (from org 10.0.0.0/8)",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			l := newLedger(func() time.Time { return now })
			for _, s := range tc.steps {
				switch {
				case s.advance > 0:
					now = now.Add(s.advance)
					l.expire()
				case s.forget != "":
					l.forget(s.forget, "")
				default:
					l.sync(s.sync)
				}
			}
			if got := state(l); !maps.Equal(got, tc.want) {
				t.Errorf("unexpected ledger (-got +want):\n%s", diff.Diff(got, tc.want))
			}
			checkRestore(t, l)
		})
	}
}

// statusOf renders the ledger as the claims' status would record it.
func statusOf(l *ledger) []claimSpec {
	var out []claimSpec
	for _, name := range slices.Sorted(maps.Keys(l.claims)) {
		e := l.claims[name]
		s := claimSpec{name: name, uid: e.uid, generation: e.generation, resourceVersion: 1 << 40, recorded: map[networkingv1alpha1.RecordKey]recordedStatus{}}
		for _, k := range e.order {
			r := e.records[k]
			s.records = append(s.records, r.recordSpec)
			rs := recordedStatus{allocated: r.allocated, date: r.since, seq: r.seq, reason: r.reason}
			if r.prefix.IsValid() {
				rs.prefix = r.prefix
			}
			if r.reason == networkingv1alpha1.ReasonConflict {
				rs.conflict = r.holder
			}
			rs.cooling = slices.Clone(l.cooling[r])
			s.recorded[k] = rs
		}
		out = append(out, s)
	}
	return out
}

// checkRestore rebuilds a ledger from the status that l would write: it
// must hold the same allocations and decide nothing new.
func checkRestore(t *testing.T, l *ledger) {
	t.Helper()
	restored := testLedger()
	if changes := restored.restore(statusOf(l)); len(changes) > 0 {
		t.Errorf("a restore from status made %d new decisions, first %+v", len(changes), changes[0])
	}
	if got, want := state(restored), state(l); !maps.Equal(got, want) {
		t.Errorf("the restored ledger differs (-restored +before):\n%s", diff.Diff(got, want))
	}
	if got, want := coolingState(restored), coolingState(l); !maps.Equal(got, want) {
		t.Errorf("the restored ledger cools other prefixes (-restored +before):\n%s", diff.Diff(got, want))
	}
}

func TestLedgerRestore(t *testing.T) {
	l := testLedger()
	l.restore([]claimSpec{
		// Written before the order was recorded: waits ahead of others.
		func() claimSpec {
			s := spec("legacy", 50, exact("10.0.0.0/24"))
			s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{{Prefix: "10.0.0.0/24"}: {date: t0, reason: networkingv1alpha1.ReasonConflict}}
			return s
		}(),
		func() claimSpec {
			s := spec("holder", 40, exact("10.0.0.0/16"))
			s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{{Prefix: "10.0.0.0/16"}: {allocated: true, prefix: netip.MustParsePrefix("10.0.0.0/16"), seq: 40}}
			return s
		}(),
		func() claimSpec {
			s := spec("newer", 60, exact("10.0.0.0/20"))
			s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{{Prefix: "10.0.0.0/20"}: {seq: 7, reason: networkingv1alpha1.ReasonConflict, conflict: holding{"holder", netip.MustParsePrefix("10.0.0.0/16")}}}
			return s
		}(),
		// A pool record keeps the prefix its status records.
		func() claimSpec {
			s := spec("org", 1, exact("10.8.0.0/13").delegable())
			s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{{Prefix: "10.8.0.0/13"}: {allocated: true, prefix: netip.MustParsePrefix("10.8.0.0/13"), seq: 1}}
			return s
		}(),
		func() claimSpec {
			s := spec("p", 2, pool("pods", "org", 16))
			s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{{Name: "pods"}: {allocated: true, prefix: netip.MustParsePrefix("10.12.0.0/16"), seq: 2}}
			return s
		}(),
	})
	want := map[string]string{
		"legacy/10.0.0.0/24": "Conflict: overlaps 10.0.0.0/16 held by NetworkClaim holder",
		"holder/10.0.0.0/16": "Allocated 10.0.0.0/16",
		"newer/10.0.0.0/20":  "Conflict: overlaps 10.0.0.0/16 held by NetworkClaim holder",
		"org/10.8.0.0/13":    "Allocated 10.8.0.0/13",
		"p/pods":             "Allocated 10.12.0.0/16 (from org 10.8.0.0/13)",
	}
	if got := state(l); !maps.Equal(got, want) {
		t.Fatalf("unexpected restored ledger (-got +want):\n%s", diff.Diff(got, want))
	}
	// The legacy record (no order recorded) goes first, although newer's
	// order (7) is lower than the holder's own.
	changes := l.forget("holder", "")
	if got := formatChanges(changes); !slices.Equal(got, []string{"Released holder/10.0.0.0/16", "Allocated legacy/10.0.0.0/24", "Blocker newer/10.0.0.0/20"}) {
		t.Errorf("changes on release: %q", got)
	}
}

// A restore decides records nobody decided yet after the ones that waited:
// a delegable prefix first allocated then must serve the records that
// waited for it, as it does when sync allocates one, first come first
// served.
func TestLedgerRestoreServesWaitersOfNewPools(t *testing.T) {
	waited := func(s claimSpec, key networkingv1alpha1.RecordKey, seq uint64) claimSpec {
		s.recorded = map[networkingv1alpha1.RecordKey]recordedStatus{key: {date: t0, seq: seq, reason: networkingv1alpha1.ReasonPoolNotFound}}
		return s
	}
	for _, tc := range []struct {
		name   string
		claims []claimSpec
		want   map[string]string
	}{{
		name: "a pool record",
		claims: []claimSpec{
			// Created, but its status not written before the restart.
			spec("org", 9, exact("10.0.0.0/8").delegable()),
			waited(spec("a", 5, pool("p", "org", 16)), networkingv1alpha1.RecordKey{Name: "p"}, 5),
			spec("b", 10, pool("p", "org", 16)),
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/p":            "Allocated 10.0.0.0/16 (from org 10.0.0.0/8)",
			"b/p":            "Allocated 10.1.0.0/16 (from org 10.0.0.0/8)",
		},
	}, {
		name: "a sub-prefix",
		claims: []claimSpec{
			spec("org", 9, exact("10.0.0.0/8").delegable()),
			waited(spec("a", 5, sub("10.5.0.0/16", "org")), networkingv1alpha1.RecordKey{Prefix: "10.5.0.0/16"}, 5),
		},
		want: map[string]string{
			"org/10.0.0.0/8": "Allocated 10.0.0.0/8",
			"a/10.5.0.0/16":  "Allocated 10.5.0.0/16 (from org 10.0.0.0/8)",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLedger()
			l.restore(tc.claims)
			if got := state(l); !maps.Equal(got, tc.want) {
				t.Errorf("unexpected restored ledger (-got +want):\n%s", diff.Diff(got, tc.want))
			}
		})
	}
}

func formatChanges(changes []change) []string {
	var out []string
	for _, c := range changes {
		out = append(out, fmt.Sprintf("%s %s/%s", c.kind, c.claim, c.key))
	}
	return out
}

// TestLedgerRandomHistories plays random histories of claims with exact,
// delegable, sub-prefix and pool records, nested, on a small address space
// where they collide often, and checks after every step what the ledger
// promises: allocations overlap only within a delegation chain; every
// waiting record truly waits (nothing it asks for is free); pool records
// got the lowest free prefix; allocations are sticky; a restore from
// status changes nothing.
//
// Delegable records get random pool policies (length bounds, records per
// claim, reservations, a reuse grace period) and the clock moves on a few
// seconds a step: no reserved or cooling prefix is handed out, no new
// allocation breaks its pool's policy, and every pool's utilization
// matches a count of its addresses one by one.
func TestLedgerRandomHistories(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 12))
		now := t0
		l := newLedger(func() time.Time { return now })
		var rv uint64
		names := []string{"a", "b", "c", "d", "e", "f"}
		var history []string
		for i := range 40 {
			now = now.Add(time.Duration(r.IntN(3)) * time.Second)
			before := heldBy(l)
			cooling := maps.Clone(l.cooling)
			name := names[r.IntN(len(names))]
			var desc string
			changes := l.expire()
			if len(changes) > 0 {
				history = append(history, fmt.Sprintf("expire at %s → %q", now.Format(time.TimeOnly), formatChanges(changes)))
			}
			if r.IntN(5) == 0 {
				desc = "forget " + name
				changes = append(changes, l.forget(name, "")...)
			} else {
				rv++
				s := spec(name, rv, randomRecords(r, name, names)...)
				if e, ok := l.claims[name]; ok {
					s.generation = e.generation + 1
				}
				desc = fmt.Sprintf("sync %s %v", name, s.records)
				changes = append(changes, l.sync(s)...)
			}
			where := fmt.Sprintf("seed %d step %d (%s)", seed, i, desc)
			history = append(history, fmt.Sprintf("%s → %q", desc, formatChanges(changes)))
			checkLedger(t, where, l, before, changes)
			checkPolicies(t, where, l, cooling, changes)
			checkUsage(t, where, l)
			if t.Failed() {
				t.Logf("history:\n%s", strings.Join(history, "\n"))
				return
			}
		}
	}
}

func randomRecords(r *rand.Rand, self string, names []string) []recordSpec {
	var out []recordSpec
	used := map[networkingv1alpha1.RecordKey]bool{}
	var exacts []netip.Prefix
	for range 1 + r.IntN(3) {
		var rs recordSpec
		from := names[r.IntN(len(names))]
		if from == self {
			from = ""
		}
		switch k := r.IntN(4); {
		case k == 0 && from != "":
			rs = pool(fmt.Sprintf("p%d", len(out)), from, 26+r.IntN(5))
		default:
			bits := 24 + r.IntN(7)
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(256))}), bits).Masked()
			if slices.ContainsFunc(exacts, p.Overlaps) {
				continue
			}
			exacts = append(exacts, p)
			rs = exact(p.String())
			if k == 1 {
				rs.req.from = from
			}
		}
		if r.IntN(2) == 0 {
			rs = rs.delegable()
			if rs.req.prefix.IsValid() && r.IntN(2) == 0 {
				rs.policy = randomPolicy(r, rs.req.prefix)
			}
		}
		if !used[rs.key] {
			used[rs.key] = true
			out = append(out, rs)
		}
	}
	return out
}

// heldBy maps each allocated record to its prefix.
func heldBy(l *ledger) map[*record]netip.Prefix {
	out := map[*record]netip.Prefix{}
	for p, r := range l.held.All() {
		out[r] = p
	}
	return out
}

// related reports whether a descends from b or b from a, by a walk of the
// delegation chain written for the test: the parent of x is the held
// delegable record of claim x.from that contains x.
func related(held map[*record]netip.Prefix, a, b *record) bool {
	return descends(held, a, b) || descends(held, b, a)
}

func descends(held map[*record]netip.Prefix, x, anc *record) bool {
	for range 20 {
		parent := parentOf(held, x)
		if parent == nil {
			return false
		}
		if parent == anc {
			return true
		}
		x = parent
	}
	return false
}

// parentOf is the held record of claim x.from that contains x, the least
// specific, as the ledger picks.
func parentOf(held map[*record]netip.Prefix, x *record) *record {
	var parent *record
	xp := held[x]
	if !xp.IsValid() {
		xp = x.prefix
	}
	for h, p := range held {
		if h != x && h.claim == x.req.from && p.Bits() < xp.Bits() && p.Contains(xp.Addr()) &&
			(!x.req.pool.IsValid() || x.req.pool == p) && (parent == nil || p.Bits() < held[parent].Bits()) {
			parent = h
		}
	}
	return parent
}

// orphanIn reports whether x, or the top of its delegation chain, is taken
// from a claim that holds no pool around it any more, and lies in p: the
// pool went, its sub-prefixes kept their space.
func orphanIn(held map[*record]netip.Prefix, x *record, p netip.Prefix) bool {
	top := x
	for range 20 {
		parent := parentOf(held, top)
		if parent == nil {
			break
		}
		top = parent
	}
	q := held[top]
	return top.req.from != "" && p.Bits() <= q.Bits() && p.Contains(q.Addr())
}

// free reports whether r could hold p now.
func free(held map[*record]netip.Prefix, r *record, p netip.Prefix) bool {
	probe := *r
	probe.prefix = p
	for h, q := range held {
		if h != r && q.Overlaps(p) && !related(held, &probe, h) {
			return false
		}
	}
	return true
}

func checkLedger(t *testing.T, where string, l *ledger, before map[*record]netip.Prefix, changes []change) {
	t.Helper()
	checkCounts(t, where, l)
	checkKeptUsage(t, where, l)
	held := heldBy(l)
	checkOverlaps(t, where, held)
	// Sticky: an allocation still in the ledger keeps its prefix.
	for r, p := range before {
		if e := l.claims[r.claim]; e != nil && e.records[r.key] == r && held[r] != p {
			t.Errorf("%s: %s/%s lost its allocation %s", where, r.claim, r.key, p)
		}
	}
	newly := map[networkingv1alpha1.RecordKey]map[string]bool{}
	for _, c := range changes {
		if c.kind == changeAllocated {
			if newly[c.key] == nil {
				newly[c.key] = map[string]bool{}
			}
			newly[c.key][c.claim] = true
		}
	}
	for _, e := range l.claims {
		for _, r := range e.records {
			parents := poolsOf(l, held, r)
			switch {
			case r.allocated && r.req.length >= 0 && newly[r.key][r.claim]:
				// First fit: no lower free prefix in the pool it came from.
				for _, pool := range parents {
					if !pool.Contains(r.prefix.Addr()) {
						continue
					}
					for _, lower := range blocks(pool, r.req.length) {
						if lower.Addr().Compare(r.prefix.Addr()) < 0 && free(held, r, lower) && !excludedFor(l, poolOf(held, r, pool), lower, r, true) {
							t.Errorf("%s: %s/%s got %s, but %s was free", where, r.claim, r.key, r.prefix, lower)
						}
					}
				}
			case !r.allocated && r.req.length >= 0:
				for _, pool := range parents {
					if !policyAllows(held, poolOf(held, r, pool), r, r.req.length) {
						continue
					}
					for _, b := range blocks(pool, r.req.length) {
						if free(held, r, b) && !excludedFor(l, poolOf(held, r, pool), b, r, true) {
							t.Errorf("%s: %s/%s waits (%s) although %s is free", where, r.claim, r.key, r.reason, b)
						}
					}
				}
			case !r.allocated:
				allowed := true
				for _, pool := range parents {
					rec := poolOf(held, r, pool)
					allowed = allowed && policyAllows(held, rec, r, r.req.prefix.Bits()) && !excludedFor(l, rec, r.req.prefix, r, false)
				}
				if (r.req.from == "" || len(parents) > 0) && allowed && free(held, r, r.req.prefix) {
					t.Errorf("%s: %s/%s waits (%s %v) although %s is free", where, r.claim, r.key, r.reason, r.holder, r.req.prefix)
				}
			}
		}
	}
	if !t.Failed() {
		checkRestore(t, l)
		if t.Failed() {
			t.Logf("%s: ledger %v", where, state(l))
		}
	}
}

// checkOverlaps checks that allocations overlap only within a delegation
// chain, or where a sub-prefix outlived its pool.
func checkOverlaps(t *testing.T, where string, held map[*record]netip.Prefix) {
	t.Helper()
	for a, p := range held {
		for b, q := range held {
			if a != b && p.Overlaps(q) && !related(held, a, b) && !orphanIn(held, a, q) && !orphanIn(held, b, p) {
				t.Errorf("%s: %s/%s %s and %s/%s %s overlap outside a delegation chain", where, a.claim, a.key, p, b.claim, b.key, q)
			}
		}
	}
}

// poolsOf returns the held delegable prefixes a record may be taken from.
func poolsOf(l *ledger, held map[*record]netip.Prefix, r *record) []netip.Prefix {
	var out []netip.Prefix
	for h, p := range held {
		if r.req.from == "" || h.claim != r.req.from || !h.req.delegable {
			continue
		}
		if r.req.length >= 0 && (r.req.length <= p.Bits() || r.req.length > p.Addr().BitLen()) {
			continue
		}
		if r.req.length < 0 && !(p.Bits() < r.req.prefix.Bits() && p.Contains(r.req.prefix.Addr())) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// blocks lists the prefixes of a length inside a pool, lowest first.
func blocks(pool netip.Prefix, length int) []netip.Prefix {
	var out []netip.Prefix
	for a := pool.Addr(); a.IsValid() && pool.Contains(a); {
		b := netip.PrefixFrom(a, length)
		out = append(out, b)
		a = lastAddr(b).Next() // invalid past the family's last address
	}
	return out
}

func (r recordSpec) String() string {
	var b strings.Builder
	b.WriteString(r.key.String())
	if r.req.from != "" {
		fmt.Fprintf(&b, "<-%s", r.req.from)
	}
	if r.req.length >= 0 {
		fmt.Fprintf(&b, "/%d", r.req.length)
	}
	if r.req.delegable {
		b.WriteString("*")
	}
	return b.String()
}

// counts must agree with the records, which it no longer walks.
func checkCounts(t *testing.T, where string, l *ledger) {
	t.Helper()
	allocated, waiting := 0, 0
	for _, e := range l.claims {
		for _, r := range e.records {
			if r.allocated {
				allocated++
			} else {
				waiting++
			}
		}
	}
	if a, w := l.counts(); a != allocated || w != waiting {
		t.Errorf("%s: counts() = %d allocated, %d waiting; the records say %d and %d", where, a, w, allocated, waiting)
	}
}

func TestLastAddr(t *testing.T) {
	for p, want := range map[string]string{
		"10.0.0.0/8":     "10.255.255.255",
		"10.8.0.0/13":    "10.15.255.255",
		"10.1.2.3/32":    "10.1.2.3",
		"0.0.0.0/0":      "255.255.255.255",
		"fd00::/32":      "fd00:0:ffff:ffff:ffff:ffff:ffff:ffff",
		"fd00:0:8::/45":  "fd00:0:f:ffff:ffff:ffff:ffff:ffff",
		"::/0":           "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		"fd00::1/128":    "fd00::1",
		"192.168.0.0/23": "192.168.1.255",
	} {
		if got := lastAddr(netip.MustParsePrefix(p)); got != netip.MustParseAddr(want) {
			t.Errorf("lastAddr(%s) = %s, want %s", p, got, want)
		}
	}
}

// randomPolicy returns a pool policy for p: each rule set half the time.
func randomPolicy(r *rand.Rand, p netip.Prefix) *poolPolicy {
	policy := &poolPolicy{}
	if r.IntN(2) == 0 && p.Bits() < 31 {
		policy.minLength = p.Bits() + 1 + r.IntN(2)
	}
	if r.IntN(2) == 0 {
		policy.maxLength = max(policy.minLength, 28+r.IntN(5))
	}
	if r.IntN(2) == 0 {
		policy.maxRecords = 1 + r.IntN(2)
	}
	if r.IntN(2) == 0 {
		policy.grace = time.Duration(1+r.IntN(5)) * time.Second
	}
	for range r.IntN(3) {
		bits := min(p.Bits()+1+r.IntN(3), 32)
		offset := r.IntN(1 << (32 - p.Bits()))
		a := p.Addr().As4()
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		v += uint32(offset)
		q := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits).Masked()
		if q.Bits() > p.Bits() && p.Contains(q.Addr()) && !slices.ContainsFunc(policy.reserved, q.Overlaps) {
			policy.reserved = append(policy.reserved, q)
		}
	}
	slices.SortFunc(policy.reserved, comparePrefixes)
	return policy
}

// poolOf returns the held delegable record of r's from claim at prefix p.
func poolOf(held map[*record]netip.Prefix, r *record, p netip.Prefix) *record {
	for h, q := range held {
		if q == p && h.claim == r.req.from && h.req.delegable {
			return h
		}
	}
	return nil
}

// childrenOf counts the held records of claim taken directly from pool,
// other than except, by the test's own walk of the chain.
func childrenOf(held map[*record]netip.Prefix, pool *record, claim string, except *record) int {
	n := 0
	for h := range held {
		if h != except && h.claim == claim && parentOf(held, h) == pool {
			n++
		}
	}
	return n
}

// policyAllows reports whether pool's policy lets claim take a /length
// from it now, holding what it holds.
func policyAllows(held map[*record]netip.Prefix, pool *record, r *record, length int) bool {
	p := pool.policy
	if p == nil {
		return true
	}
	return (p.minLength == 0 || length >= p.minLength) && (p.maxLength == 0 || length <= p.maxLength) &&
		(p.maxRecords == 0 || childrenOf(held, pool, r.claim, r) < p.maxRecords)
}

// excludedFor reports whether b lies on a reservation or a cooling prefix
// of pool that r may not have: first fit skips both, an exact record only
// the cooling prefixes others released.
func excludedFor(l *ledger, pool *record, b netip.Prefix, r *record, firstFit bool) bool {
	if firstFit && pool.policy != nil && slices.ContainsFunc(pool.policy.reserved, b.Overlaps) {
		return true
	}
	for _, c := range l.cooling[pool] {
		if c.prefix.Overlaps(b) && (firstFit || c.claim != r.claim) {
			return true
		}
	}
	return false
}

// checkPolicies checks what the random histories' policies promise:
// waiting records wait for a reason the policy, a reservation or a
// cooling prefix gives when the space is free, and no new allocation breaks
// them. cooling is the ledger's cooling lists before the step.
func checkPolicies(t *testing.T, where string, l *ledger, cooling map[*record][]cooled, changes []change) {
	t.Helper()
	held := heldBy(l)
	for _, c := range changes {
		if c.kind != changeAllocated {
			continue
		}
		r := l.claims[c.claim].records[c.key]
		pool := parentOf(held, r)
		if pool == nil || r.req.from == "" {
			continue
		}
		if p := pool.policy; p != nil {
			if (p.minLength > 0 && r.prefix.Bits() < p.minLength) || (p.maxLength > 0 && r.prefix.Bits() > p.maxLength) {
				t.Errorf("%s: %s/%s got %s, outside the lengths /%d-/%d of its pool %s", where, r.claim, r.key, r.prefix, p.minLength, p.maxLength, held[pool])
			}
			if p.maxRecords > 0 && childrenOf(held, pool, r.claim, nil) > p.maxRecords {
				t.Errorf("%s: %s holds %d records from %s, more than its policy's %d", where, r.claim, childrenOf(held, pool, r.claim, nil), held[pool], p.maxRecords)
			}
			if r.req.length >= 0 && slices.ContainsFunc(p.reserved, r.prefix.Overlaps) {
				t.Errorf("%s: first fit gave %s/%s the reserved %s", where, r.claim, r.key, r.prefix)
			}
		}
		for _, cl := range cooling[pool] {
			if cl.prefix.Overlaps(r.prefix) && (r.req.length >= 0 || cl.claim != r.claim) && l.now().Before(cl.until) {
				t.Errorf("%s: %s/%s got %s, which %s released and which rests until %s", where, r.claim, r.key, r.prefix, cl.claim, cl.until)
			}
		}
	}
	for pool, list := range l.cooling {
		for _, c := range list {
			if !l.now().Before(c.until) {
				t.Errorf("%s: %s still cools in %s after its grace period", where, c.prefix, held[pool])
			}
		}
	}
}

// checkUsage counts every pool's addresses one by one and compares with
// the ledger's utilization.
func checkUsage(t *testing.T, where string, l *ledger) {
	t.Helper()
	held := heldBy(l)
	for pool, p := range held {
		if !pool.req.delegable || p.Bits() < 16 {
			continue
		}
		counts := map[string]int64{}
		isFree := map[netip.Addr]bool{}
		subs, tenants := 0, map[string]bool{}
		for h := range held {
			if parentOf(held, h) == pool {
				subs++
				tenants[h.claim] = true
			}
		}
		for a := p.Addr(); a.IsValid() && p.Contains(a); a = a.Next() {
			state := "free"
			switch {
			case slices.ContainsFunc(slices.Collect(maps.Keys(held)), func(h *record) bool { q := held[h]; return q.Bits() > p.Bits() && q.Contains(a) }):
				state = "allocated"
			case pool.policy != nil && slices.ContainsFunc(pool.policy.reserved, func(q netip.Prefix) bool { return q.Contains(a) }):
				state = "reserved"
			case slices.ContainsFunc(l.cooling[pool], func(c cooled) bool { return c.prefix.Contains(a) }):
				state = "cooling"
			}
			counts[state]++
			isFree[a] = state == "free"
		}
		var largest netip.Prefix
		for bits := p.Bits(); bits <= 32 && !largest.IsValid(); bits++ {
			for _, b := range blocks(p, bits) {
				all := true
				for a := b.Addr(); a.IsValid() && b.Contains(a); a = a.Next() {
					all = all && isFree[a]
				}
				if all {
					largest = b
					break
				}
			}
		}
		u := l.countUsage(pool)
		got := fmt.Sprintf("allocated %s reserved %s cooling %s free %s largest %s subs %d tenants %d", u.allocated, u.reserved, u.cooling, u.free, u.largestFree, u.subPrefixes, u.tenants)
		want := fmt.Sprintf("allocated %d reserved %d cooling %d free %d largest %s subs %d tenants %d", counts["allocated"], counts["reserved"], counts["cooling"], counts["free"], largest, subs, len(tenants))
		if got != want {
			t.Errorf("%s: pool %s/%s %s: usage says %s; counted %s", where, pool.claim, pool.key, p, got, want)
		}
	}
}

// checkKeptUsage compares every allocated pool's figures, as the ledger
// keeps them and searches its largest free block, with a count from
// scratch (countUsage, which checkUsage checks address by address), and
// checks that the ledger keeps figures for its pools only. usageOf moves
// the pools' full marks, which production moves only at a status write:
// the check puts them back, so that the test's next first fit starts from
// the marks production would have.
func checkKeptUsage(t *testing.T, where string, l *ledger) {
	t.Helper()
	full := maps.Clone(l.full)
	defer func() { l.full = full }()
	for pool := range heldBy(l) {
		if !pool.req.delegable {
			if _, ok := l.figures[pool]; ok {
				t.Errorf("%s: %s/%s %s keeps pool figures, but is no pool", where, pool.claim, pool.key, pool.prefix)
			}
			continue
		}
		if _, ok := l.figures[pool]; !ok {
			t.Errorf("%s: pool %s/%s %s has no kept figures", where, pool.claim, pool.key, pool.prefix)
			continue
		}
		want := describeUsage(l.countUsage(pool))
		if got := describeUsage(l.usageOf(pool)); got != want {
			t.Errorf("%s: pool %s/%s %s: kept figures say %s; counted from scratch %s", where, pool.claim, pool.key, pool.prefix, got, want)
		}
	}
	for pool := range l.figures {
		if !pool.allocated || !pool.req.delegable {
			t.Errorf("%s: figures kept for %s/%s, which is no allocated pool", where, pool.claim, pool.key)
		}
	}
}

func describeUsage(u *poolUsage) string {
	return fmt.Sprintf("size %s allocated %s reserved %s cooling %s free %s largest %s subs %d tenants %d", u.size, u.allocated, u.reserved, u.cooling, u.free, u.largestFree, u.subPrefixes, u.tenants)
}

// coolingState renders every pool's cooling list.
func coolingState(l *ledger) map[string]string {
	out := map[string]string{}
	for pool, list := range l.cooling {
		var s []string
		for _, c := range list {
			s = append(s, fmt.Sprintf("%s by %s until %s", c.prefix, c.claim, c.until.Format(time.TimeOnly)))
		}
		out[pool.claim+"/"+pool.key.String()] = strings.Join(s, ", ")
	}
	return out
}
