package allocation

import (
	"cmp"
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
)

// t0 is the fake clock's start; every time in these tests is an offset from
// it, shown as "@3s".
var t0 = time.Date(2025, time.March, 1, 12, 0, 0, 0, time.UTC)

// offset renders t as seconds from t0, e.g. "3s" or "1.5s".
func offset(t time.Time) string { return fmt.Sprint(t.Sub(t0).Seconds()) + "s" }

// at is t0 plus sec seconds.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock            { return &fakeClock{t: t0} }
func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }

// claim is a claim spec whose uid is derived from its name and which was
// created at t0 plus created seconds.
func claim(name string, created int, generation int64, prefixes ...string) claimSpec {
	s := claimSpec{name: name, uid: types.UID(name + "-uid"), created: at(created), generation: generation}
	for _, p := range prefixes {
		s.prefixes = append(s.prefixes, netip.MustParsePrefix(p))
	}
	return s
}

func withUID(s claimSpec, uid types.UID) claimSpec {
	s.uid = uid
	return s
}

// withStatus adds what the claim's status records, for restore.
func withStatus(s claimSpec, recorded map[string]recordedStatus) claimSpec {
	s.recorded = map[netip.Prefix]recordedStatus{}
	for p, r := range recorded {
		s.recorded[netip.MustParsePrefix(p)] = r
	}
	return s
}

func allocatedAt(sec int) recordedStatus   { return recordedStatus{allocated: true, date: at(sec)} }
func unavailableAt(sec int) recordedStatus { return recordedStatus{date: at(sec)} }

// op is one step of a history: the clock moves by tick, then the claim is
// synced, or forgotten when forget is set; want is the changes it must make.
type op struct {
	tick      time.Duration
	sync      claimSpec
	forget    string
	forgetUID types.UID
	want      []string
}

func (o op) String() string {
	if o.forget != "" {
		return fmt.Sprintf("forget(%s, %q)", o.forget, o.forgetUID)
	}
	return fmt.Sprintf("sync(%s uid=%s generation=%d %v)", o.sync.name, o.sync.uid, o.sync.generation, o.sync.prefixes)
}

// apply runs o on l and returns the changes.
func (o op) apply(l *ledger, clock *fakeClock) []change {
	clock.step(o.tick)
	if o.forget != "" {
		return l.forget(o.forget, o.forgetUID)
	}
	return l.sync(o.sync)
}

func runOps(t *testing.T, l *ledger, clock *fakeClock, ops []op) {
	t.Helper()
	for i, o := range ops {
		got := formatChanges(o.apply(l, clock))
		if want := o.want; !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("op %d %v: unexpected changes (-got +want):\n%s", i, o, diff.Diff(got, want))
		}
	}
}

// formatChanges renders changes as
// "<kind> <claim> <prefix>[, <holderPrefix> held by <holder>]".
func formatChanges(changes []change) []string {
	var out []string
	for _, c := range changes {
		s := fmt.Sprintf("%s %s %s", c.kind, c.claim, c.prefix)
		if c.holder != "" || c.holderPrefix.IsValid() {
			s += fmt.Sprintf(", %s held by %s", c.holderPrefix, c.holder)
		}
		out = append(out, s)
	}
	return out
}

// formatDecision renders a decision as "Allocated @<since>" or
// "Unavailable @<since>, <holderPrefix> held by <holder>".
func formatDecision(d decision) string {
	if d.allocated {
		s := fmt.Sprintf("Allocated @%s", offset(d.since))
		if d.holder != "" || d.holderPrefix.IsValid() {
			s += fmt.Sprintf(", %s held by %s", d.holderPrefix, d.holder)
		}
		return s
	}
	return fmt.Sprintf("Unavailable @%s, %s held by %s", offset(d.since), d.holderPrefix, d.holder)
}

// allRecords is every record the ledger holds, as "<claim> <prefix>" to
// formatDecision, read through records().
func allRecords(t *testing.T, l *ledger) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, e := range l.claims {
		_, records, ok := l.records(name, e.uid)
		if !ok {
			t.Fatalf("records(%s, %s) does not know a claim the ledger holds", name, e.uid)
		}
		for p, d := range records {
			out[name+" "+p.String()] = formatDecision(d)
		}
	}
	return out
}

// checkRecords compares the ledger's records with want, and counts() with
// the tally of want.
func checkRecords(t *testing.T, l *ledger, want map[string]string) {
	t.Helper()
	got := allRecords(t, l)
	if !maps.Equal(got, want) {
		t.Errorf("unexpected records (-got +want):\n%s", diff.Diff(got, want))
	}
	var wantAllocated, wantWaiting int
	for _, s := range want {
		if strings.HasPrefix(s, "Allocated") {
			wantAllocated++
		} else {
			wantWaiting++
		}
	}
	if allocated, waiting := l.counts(); allocated != wantAllocated || waiting != wantWaiting {
		t.Errorf("counts() = (%d, %d), want (%d, %d)", allocated, waiting, wantAllocated, wantWaiting)
	}
}

func TestUnavailableMessage(t *testing.T) {
	tests := []struct {
		holderPrefix string
		holder       string
		want         string
	}{
		{"10.96.0.0/12", "kube-apiserver", "overlaps 10.96.0.0/12 held by NetworkClaim kube-apiserver"},
		{"fd00:10:96::/112", "kube-apiserver", "overlaps fd00:10:96::/112 held by NetworkClaim kube-apiserver"},
	}
	for _, tc := range tests {
		if got := unavailableMessage(netip.MustParsePrefix(tc.holderPrefix), tc.holder); got != tc.want {
			t.Errorf("unavailableMessage(%s, %s) = %q, want %q", tc.holderPrefix, tc.holder, got, tc.want)
		}
	}
}

func TestLedgerSync(t *testing.T) {
	tests := []struct {
		name        string
		ops         []op
		wantRecords map[string]string
	}{
		{
			name: "the first claim is allocated, the same prefix of another is unavailable",
			ops: []op{
				{sync: claim("kube-apiserver", 0, 1, "10.96.0.0/12"), want: []string{"Allocated kube-apiserver 10.96.0.0/12"}},
				{tick: time.Second, sync: claim("other", 1, 1, "10.96.0.0/12"), want: []string{"Unavailable other 10.96.0.0/12, 10.96.0.0/12 held by kube-apiserver"}},
			},
			wantRecords: map[string]string{
				"kube-apiserver 10.96.0.0/12": "Allocated @0s",
				"other 10.96.0.0/12":          "Unavailable @1s, 10.96.0.0/12 held by kube-apiserver",
			},
		},
		{
			name: "disjoint prefixes are all allocated",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{sync: claim("b", 0, 1, "10.1.0.0/16", "192.168.0.0/16"), want: []string{"Allocated b 10.1.0.0/16", "Allocated b 192.168.0.0/16"}},
				{sync: claim("c", 0, 1, "10.0.1.0/24"), want: []string{"Unavailable c 10.0.1.0/24, 10.0.0.0/16 held by a"}},
				{sync: claim("d", 0, 1, "10.2.0.0/16"), want: []string{"Allocated d 10.2.0.0/16"}},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/16":    "Allocated @0s",
				"b 10.1.0.0/16":    "Allocated @0s",
				"b 192.168.0.0/16": "Allocated @0s",
				"c 10.0.1.0/24":    "Unavailable @0s, 10.0.0.0/16 held by a",
				"d 10.2.0.0/16":    "Allocated @0s",
			},
		},
		{
			name: "an allocated supernet blocks a subnet",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/8"), want: []string{"Allocated a 10.0.0.0/8"}},
				{sync: claim("b", 0, 1, "10.96.0.0/12"), want: []string{"Unavailable b 10.96.0.0/12, 10.0.0.0/8 held by a"}},
				{sync: claim("c", 0, 1, "10.96.0.1/32"), want: []string{"Unavailable c 10.96.0.1/32, 10.0.0.0/8 held by a"}},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/8":   "Allocated @0s",
				"b 10.96.0.0/12": "Unavailable @0s, 10.0.0.0/8 held by a",
				"c 10.96.0.1/32": "Unavailable @0s, 10.0.0.0/8 held by a",
			},
		},
		{
			name: "an allocated subnet blocks a supernet",
			ops: []op{
				{sync: claim("a", 0, 1, "10.96.0.0/12"), want: []string{"Allocated a 10.96.0.0/12"}},
				{sync: claim("b", 0, 1, "10.0.0.0/8"), want: []string{"Unavailable b 10.0.0.0/8, 10.96.0.0/12 held by a"}},
				{sync: claim("c", 0, 1, "0.0.0.0/0"), want: []string{"Unavailable c 0.0.0.0/0, 10.96.0.0/12 held by a"}},
			},
			wantRecords: map[string]string{
				"a 10.96.0.0/12": "Allocated @0s",
				"b 10.0.0.0/8":   "Unavailable @0s, 10.96.0.0/12 held by a",
				"c 0.0.0.0/0":    "Unavailable @0s, 10.96.0.0/12 held by a",
			},
		},
		{
			name: "of several allocations inside a prefix, the first in CIDR order is named",
			ops: []op{
				{sync: claim("b", 0, 1, "10.2.0.0/16"), want: []string{"Allocated b 10.2.0.0/16"}},
				{sync: claim("a", 0, 1, "10.1.0.0/16"), want: []string{"Allocated a 10.1.0.0/16"}},
				{sync: claim("c", 0, 1, "10.0.0.0/8"), want: []string{"Unavailable c 10.0.0.0/8, 10.1.0.0/16 held by a"}},
			},
			wantRecords: map[string]string{
				"a 10.1.0.0/16": "Allocated @0s",
				"b 10.2.0.0/16": "Allocated @0s",
				"c 10.0.0.0/8":  "Unavailable @0s, 10.1.0.0/16 held by a",
			},
		},
		{
			name: "IPv6 prefixes, nested both ways",
			ops: []op{
				{sync: claim("a", 0, 1, "fd00:10:96::/112"), want: []string{"Allocated a fd00:10:96::/112"}},
				{sync: claim("b", 0, 1, "fd00::/8"), want: []string{"Unavailable b fd00::/8, fd00:10:96::/112 held by a"}},
				{sync: claim("c", 0, 1, "fd00:10:96::1/128"), want: []string{"Unavailable c fd00:10:96::1/128, fd00:10:96::/112 held by a"}},
				// Inside b's prefix, but b waits: it holds nothing.
				{sync: claim("d", 0, 1, "fd00:20::/64"), want: []string{"Allocated d fd00:20::/64"}},
				{sync: claim("e", 0, 1, "fd00:10:97::/112"), want: []string{"Allocated e fd00:10:97::/112"}},
			},
			wantRecords: map[string]string{
				"a fd00:10:96::/112":  "Allocated @0s",
				"b fd00::/8":          "Unavailable @0s, fd00:10:96::/112 held by a",
				"c fd00:10:96::1/128": "Unavailable @0s, fd00:10:96::/112 held by a",
				"d fd00:20::/64":      "Allocated @0s",
				"e fd00:10:97::/112":  "Allocated @0s",
			},
		},
		{
			name: "IPv4 and IPv6 never overlap",
			ops: []op{
				{sync: claim("v4", 0, 1, "0.0.0.0/0"), want: []string{"Allocated v4 0.0.0.0/0"}},
				{sync: claim("v6", 0, 1, "::/0"), want: []string{"Allocated v6 ::/0"}},
				{sync: claim("x", 0, 1, "fd00:10:96::/112", "10.96.0.0/12"), want: []string{
					"Unavailable x fd00:10:96::/112, ::/0 held by v6",
					"Unavailable x 10.96.0.0/12, 0.0.0.0/0 held by v4",
				}},
			},
			wantRecords: map[string]string{
				"v4 0.0.0.0/0":       "Allocated @0s",
				"v6 ::/0":            "Allocated @0s",
				"x fd00:10:96::/112": "Unavailable @0s, ::/0 held by v6",
				"x 10.96.0.0/12":     "Unavailable @0s, 0.0.0.0/0 held by v4",
			},
		},
		{
			name: "a dual-stack claim is decided record by record",
			ops: []op{
				{sync: claim("a", 0, 1, "10.96.0.0/12", "fd00:10:96::/112"), want: []string{"Allocated a 10.96.0.0/12", "Allocated a fd00:10:96::/112"}},
				{tick: time.Second, sync: claim("b", 0, 1, "fd00:20::/64", "10.100.0.0/16"), want: []string{
					"Allocated b fd00:20::/64",
					"Unavailable b 10.100.0.0/16, 10.96.0.0/12 held by a",
				}},
			},
			wantRecords: map[string]string{
				"a 10.96.0.0/12":     "Allocated @0s",
				"a fd00:10:96::/112": "Allocated @0s",
				"b fd00:20::/64":     "Allocated @1s",
				"b 10.100.0.0/16":    "Unavailable @1s, 10.96.0.0/12 held by a",
			},
		},
		{
			name: "sticky: a claim created earlier but seen later, or edited later, does not take an allocation",
			ops: []op{
				{sync: claim("young", 50, 1, "10.5.0.0/16"), want: []string{"Allocated young 10.5.0.0/16"}},
				{tick: time.Second, sync: claim("old", 0, 1, "10.0.0.0/16"), want: []string{"Allocated old 10.0.0.0/16"}},
				// Edited to add a subnet, then a supernet, of young's prefix.
				{tick: time.Second, sync: claim("old", 0, 2, "10.0.0.0/16", "10.5.128.0/17"), want: []string{"Unavailable old 10.5.128.0/17, 10.5.0.0/16 held by young"}},
				{tick: time.Second, sync: claim("old", 0, 3, "10.0.0.0/16", "10.4.0.0/14"), want: []string{"Unavailable old 10.4.0.0/14, 10.5.0.0/16 held by young"}},
				// Created earliest, seen last.
				{tick: time.Second, sync: claim("oldest", -10, 1, "10.5.0.0/16"), want: []string{"Unavailable oldest 10.5.0.0/16, 10.5.0.0/16 held by young"}},
				// Edits of the holder keep what stays in its spec; a waiting
				// record reserves nothing.
				{tick: time.Second, sync: claim("young", 50, 2, "10.6.0.0/16", "10.5.0.0/16"), want: []string{"Allocated young 10.6.0.0/16"}},
			},
			wantRecords: map[string]string{
				"young 10.5.0.0/16":  "Allocated @0s",
				"young 10.6.0.0/16":  "Allocated @5s",
				"old 10.0.0.0/16":    "Allocated @1s",
				"old 10.4.0.0/14":    "Unavailable @3s, 10.5.0.0/16 held by young",
				"oldest 10.5.0.0/16": "Unavailable @4s, 10.5.0.0/16 held by young",
			},
		},
		{
			name: "editing a claim keeps its allocations and waiting records, and their dates",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{tick: time.Second, sync: claim("b", 0, 1, "10.0.0.0/16"), want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by a"}},
				{tick: time.Second, sync: claim("a", 0, 2, "10.1.0.0/16", "10.0.0.0/16"), want: []string{"Allocated a 10.1.0.0/16"}},
				{tick: time.Second, sync: claim("b", 0, 2, "10.0.0.0/16", "10.2.0.0/16"), want: []string{"Allocated b 10.2.0.0/16"}},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/16": "Allocated @0s",
				"a 10.1.0.0/16": "Allocated @2s",
				"b 10.0.0.0/16": "Unavailable @1s, 10.0.0.0/16 held by a",
				"b 10.2.0.0/16": "Allocated @3s",
			},
		},
		{
			name: "a record that leaves the spec is released and its waiter promoted",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{tick: time.Second, sync: claim("b", 0, 1, "10.0.0.0/24"), want: []string{"Unavailable b 10.0.0.0/24, 10.0.0.0/16 held by a"}},
				{tick: time.Second, sync: claim("a", 0, 2, "10.1.0.0/16"), want: []string{
					"Released a 10.0.0.0/16",
					"Allocated b 10.0.0.0/24",
					"Allocated a 10.1.0.0/16",
				}},
			},
			wantRecords: map[string]string{
				"a 10.1.0.0/16": "Allocated @2s",
				"b 10.0.0.0/24": "Allocated @2s",
			},
		},
		{
			name: "a claim's own records never block it, but widening a prefix lets waiters go first",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{tick: time.Second, sync: claim("a", 0, 2, "10.0.0.0/8"), want: []string{"Released a 10.0.0.0/16", "Allocated a 10.0.0.0/8"}},
				{tick: time.Second, sync: claim("b", 0, 1, "10.1.0.0/16"), want: []string{"Unavailable b 10.1.0.0/16, 10.0.0.0/8 held by a"}},
				{tick: time.Second, sync: claim("a", 0, 3, "10.0.0.0/7"), want: []string{
					"Released a 10.0.0.0/8",
					"Allocated b 10.1.0.0/16",
					"Unavailable a 10.0.0.0/7, 10.1.0.0/16 held by b",
				}},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/7":  "Unavailable @3s, 10.1.0.0/16 held by b",
				"b 10.1.0.0/16": "Allocated @3s",
			},
		},
		{
			name: "forget promotes waiters first come, first served, not by creation",
			ops: []op{
				{sync: claim("holder", 0, 1, "10.0.0.0/8"), want: []string{"Allocated holder 10.0.0.0/8"}},
				{tick: time.Second, sync: claim("first", 30, 1, "10.0.0.0/16"), want: []string{"Unavailable first 10.0.0.0/16, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, sync: claim("second", 20, 1, "10.0.0.0/24"), want: []string{"Unavailable second 10.0.0.0/24, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, sync: claim("third", 10, 1, "10.1.0.0/16"), want: []string{"Unavailable third 10.1.0.0/16, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, forget: "holder", forgetUID: "holder-uid", want: []string{
					"Released holder 10.0.0.0/8",
					"Allocated first 10.0.0.0/16",
					// second stays blocked, now by first.
					"Blocker second 10.0.0.0/24, 10.0.0.0/16 held by first",
					"Allocated third 10.1.0.0/16",
				}},
			},
			wantRecords: map[string]string{
				"first 10.0.0.0/16":  "Allocated @4s",
				"second 10.0.0.0/24": "Unavailable @2s, 10.0.0.0/16 held by first",
				"third 10.1.0.0/16":  "Allocated @4s",
			},
		},
		{
			name: "forget promotes the longest waiter even when it is the narrower prefix",
			ops: []op{
				{sync: claim("holder", 0, 1, "10.0.0.0/8"), want: []string{"Allocated holder 10.0.0.0/8"}},
				{tick: time.Second, sync: claim("narrow", 30, 1, "10.0.0.0/24"), want: []string{"Unavailable narrow 10.0.0.0/24, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, sync: claim("wide", 1, 1, "10.0.0.0/16"), want: []string{"Unavailable wide 10.0.0.0/16, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, sync: claim("wider", 0, 1, "10.0.0.0/12"), want: []string{"Unavailable wider 10.0.0.0/12, 10.0.0.0/8 held by holder"}},
				{tick: time.Second, forget: "holder", forgetUID: "holder-uid", want: []string{
					"Released holder 10.0.0.0/8",
					"Allocated narrow 10.0.0.0/24",
					"Blocker wide 10.0.0.0/16, 10.0.0.0/24 held by narrow",
					"Blocker wider 10.0.0.0/12, 10.0.0.0/24 held by narrow",
				}},
				{tick: time.Second, forget: "narrow", forgetUID: "narrow-uid", want: []string{
					"Released narrow 10.0.0.0/24",
					"Allocated wide 10.0.0.0/16",
					"Blocker wider 10.0.0.0/12, 10.0.0.0/16 held by wide",
				}},
				{tick: time.Second, sync: claim("wide", 1, 2, "10.1.0.0/16"), want: []string{
					"Released wide 10.0.0.0/16",
					"Allocated wider 10.0.0.0/12",
					"Unavailable wide 10.1.0.0/16, 10.0.0.0/12 held by wider",
				}},
			},
			wantRecords: map[string]string{
				"wide 10.1.0.0/16":  "Unavailable @6s, 10.0.0.0/12 held by wider",
				"wider 10.0.0.0/12": "Allocated @6s",
			},
		},
		{
			name: "waiters of the same second are ordered by claim creation, then by name",
			ops: []op{
				{sync: claim("h", 0, 1, "10.0.0.0/16"), want: []string{"Allocated h 10.0.0.0/16"}},
				// All three wait since @1s: since is kept to the second.
				{tick: 1100 * time.Millisecond, sync: claim("c", 5, 1, "10.0.0.0/16"), want: []string{"Unavailable c 10.0.0.0/16, 10.0.0.0/16 held by h"}},
				{tick: 300 * time.Millisecond, sync: claim("b", 5, 1, "10.0.0.0/16"), want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by h"}},
				{tick: 300 * time.Millisecond, sync: claim("z", 1, 1, "10.0.0.0/16"), want: []string{"Unavailable z 10.0.0.0/16, 10.0.0.0/16 held by h"}},
				{tick: time.Second, forget: "h", forgetUID: "h-uid", want: []string{
					"Released h 10.0.0.0/16",
					"Allocated z 10.0.0.0/16",
					"Blocker b 10.0.0.0/16, 10.0.0.0/16 held by z",
					"Blocker c 10.0.0.0/16, 10.0.0.0/16 held by z",
				}},
				{tick: time.Second, forget: "z", forgetUID: "z-uid", want: []string{
					"Released z 10.0.0.0/16",
					"Allocated b 10.0.0.0/16",
					"Blocker c 10.0.0.0/16, 10.0.0.0/16 held by b",
				}},
			},
			wantRecords: map[string]string{
				"b 10.0.0.0/16": "Allocated @3s",
				"c 10.0.0.0/16": "Unavailable @1s, 10.0.0.0/16 held by b",
			},
		},
		{
			name: "a waiter of an earlier second goes first, whatever its creation",
			ops: []op{
				{sync: claim("h", 0, 1, "10.0.0.0/16"), want: []string{"Allocated h 10.0.0.0/16"}},
				{tick: 900 * time.Millisecond, sync: claim("young", 60, 1, "10.0.0.0/16"), want: []string{"Unavailable young 10.0.0.0/16, 10.0.0.0/16 held by h"}},
				{tick: 200 * time.Millisecond, sync: claim("old", 0, 1, "10.0.0.0/16"), want: []string{"Unavailable old 10.0.0.0/16, 10.0.0.0/16 held by h"}},
				{tick: time.Second, forget: "h", forgetUID: "h-uid", want: []string{
					"Released h 10.0.0.0/16",
					"Allocated young 10.0.0.0/16",
					"Blocker old 10.0.0.0/16, 10.0.0.0/16 held by young",
				}},
			},
			wantRecords: map[string]string{
				"young 10.0.0.0/16": "Allocated @2s",
				"old 10.0.0.0/16":   "Unavailable @1s, 10.0.0.0/16 held by young",
			},
		},
		{
			name: "records of one claim are promoted in prefix order",
			ops: []op{
				{sync: claim("h", 0, 1, "10.0.0.0/8", "fd00::/8"), want: []string{"Allocated h 10.0.0.0/8", "Allocated h fd00::/8"}},
				{sync: claim("w", 0, 1, "fd00:1::/32", "10.1.0.0/16", "10.0.0.0/16"), want: []string{
					"Unavailable w fd00:1::/32, fd00::/8 held by h",
					"Unavailable w 10.1.0.0/16, 10.0.0.0/8 held by h",
					"Unavailable w 10.0.0.0/16, 10.0.0.0/8 held by h",
				}},
				{forget: "h", forgetUID: "h-uid", want: []string{
					"Released h 10.0.0.0/8",
					"Released h fd00::/8",
					"Allocated w 10.0.0.0/16",
					"Allocated w 10.1.0.0/16",
					"Allocated w fd00:1::/32",
				}},
			},
			wantRecords: map[string]string{
				"w 10.0.0.0/16": "Allocated @0s",
				"w 10.1.0.0/16": "Allocated @0s",
				"w fd00:1::/32": "Allocated @0s",
			},
		},
		{
			name: "a release names the next blocker, and promotion reserves nothing for a waiter still blocked",
			ops: []op{
				{sync: claim("b", 0, 1, "10.1.0.0/16"), want: []string{"Allocated b 10.1.0.0/16"}},
				{sync: claim("c", 0, 1, "10.2.0.0/16"), want: []string{"Allocated c 10.2.0.0/16"}},
				{tick: time.Second, sync: claim("w1", 0, 1, "10.0.0.0/8"), want: []string{"Unavailable w1 10.0.0.0/8, 10.1.0.0/16 held by b"}},
				{tick: time.Second, sync: claim("w2", 0, 1, "10.1.2.0/24"), want: []string{"Unavailable w2 10.1.2.0/24, 10.1.0.0/16 held by b"}},
				{tick: time.Second, forget: "b", forgetUID: "b-uid", want: []string{
					"Released b 10.1.0.0/16",
					"Blocker w1 10.0.0.0/8, 10.2.0.0/16 held by c",
					"Allocated w2 10.1.2.0/24",
				}},
				{tick: time.Second, forget: "c", forgetUID: "c-uid", want: []string{
					"Released c 10.2.0.0/16",
					"Blocker w1 10.0.0.0/8, 10.1.2.0/24 held by w2",
				}},
				{tick: time.Second, forget: "w2", forgetUID: "w2-uid", want: []string{
					"Released w2 10.1.2.0/24",
					"Allocated w1 10.0.0.0/8",
				}},
			},
			wantRecords: map[string]string{
				"w1 10.0.0.0/8": "Allocated @5s",
			},
		},
		{
			name: "a release that leaves the named blocker in place changes nothing",
			ops: []op{
				{sync: claim("b", 0, 1, "10.1.0.0/16"), want: []string{"Allocated b 10.1.0.0/16"}},
				{sync: claim("c", 0, 1, "10.2.0.0/16"), want: []string{"Allocated c 10.2.0.0/16"}},
				{tick: time.Second, sync: claim("w", 0, 1, "10.0.0.0/8"), want: []string{"Unavailable w 10.0.0.0/8, 10.1.0.0/16 held by b"}},
				{tick: time.Second, forget: "c", forgetUID: "c-uid", want: []string{"Released c 10.2.0.0/16"}},
			},
			wantRecords: map[string]string{
				"b 10.1.0.0/16": "Allocated @0s",
				"w 10.0.0.0/8":  "Unavailable @1s, 10.1.0.0/16 held by b",
			},
		},
		{
			name: "removing a waiting record, or forgetting a claim that only waits, releases nothing",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{sync: claim("b", 0, 1, "10.0.0.0/16"), want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by a"}},
				{sync: claim("c", 0, 1, "10.0.0.0/24"), want: []string{"Unavailable c 10.0.0.0/24, 10.0.0.0/16 held by a"}},
				{sync: claim("b", 0, 2, "10.1.0.0/16"), want: []string{"Allocated b 10.1.0.0/16"}},
				{forget: "c", forgetUID: "c-uid"},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/16": "Allocated @0s",
				"b 10.1.0.0/16": "Allocated @0s",
			},
		},
		{
			name: "an older or equal generation changes nothing",
			ops: []op{
				{sync: claim("a", 0, 2, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{tick: time.Second, sync: claim("a", 0, 1, "10.1.0.0/16")},
				{tick: time.Second, sync: claim("a", 0, 2, "10.1.0.0/16")},
				{tick: time.Second, sync: claim("a", 0, 3, "10.1.0.0/16"), want: []string{"Released a 10.0.0.0/16", "Allocated a 10.1.0.0/16"}},
				{tick: time.Second, sync: claim("a", 0, 3, "10.2.0.0/16")},
			},
			wantRecords: map[string]string{
				"a 10.1.0.0/16": "Allocated @3s",
			},
		},
		{
			name: "a new uid under the same name is a new claim, whatever its generation",
			ops: []op{
				{sync: withUID(claim("a", 0, 5, "10.0.0.0/16", "10.1.0.0/16"), "uid-1"), want: []string{"Allocated a 10.0.0.0/16", "Allocated a 10.1.0.0/16"}},
				{tick: time.Second, sync: claim("b", 1, 1, "10.0.0.0/16"), want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by a"}},
				{tick: time.Second, sync: withUID(claim("a", 2, 1, "10.0.0.0/16", "10.2.0.0/16"), "uid-2"), want: []string{
					"Released a 10.0.0.0/16",
					"Released a 10.1.0.0/16",
					"Allocated b 10.0.0.0/16",
					"Unavailable a 10.0.0.0/16, 10.0.0.0/16 held by b",
					"Allocated a 10.2.0.0/16",
				}},
				// A late deletion of the old claim is ignored.
				{tick: time.Second, forget: "a", forgetUID: "uid-1"},
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/16": "Unavailable @2s, 10.0.0.0/16 held by b",
				"a 10.2.0.0/16": "Allocated @2s",
				"b 10.0.0.0/16": "Allocated @2s",
			},
		},
		{
			name: "forget ignores unknown claims and other uids; an empty uid forgets whatever claim has the name",
			ops: []op{
				{sync: claim("a", 0, 1, "10.0.0.0/16"), want: []string{"Allocated a 10.0.0.0/16"}},
				{sync: claim("b", 0, 1, "10.0.0.0/16"), want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by a"}},
				{forget: "nope", forgetUID: "nope-uid"},
				{forget: "a", forgetUID: "other-uid"},
				{tick: time.Second, forget: "a", want: []string{"Released a 10.0.0.0/16", "Allocated b 10.0.0.0/16"}},
				{forget: "a", forgetUID: "a-uid"},
			},
			wantRecords: map[string]string{
				"b 10.0.0.0/16": "Allocated @1s",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			l := newLedger(clock.now)
			runOps(t, l, clock, tc.ops)
			checkRecords(t, l, tc.wantRecords)
		})
	}
}

func TestLedgerRestore(t *testing.T) {
	const restoreAt = 100 // the clock's seconds at restore
	tests := []struct {
		name   string
		before []op // on the ledger, before it is restored
		claims []claimSpec
		// want is what restore reports.
		want        []string
		wantRecords map[string]string
		// after runs on the restored ledger.
		after            []op
		wantRecordsAfter map[string]string
	}{
		{
			name: "nothing to restore",
		},
		{
			name: "recorded allocations stand, even against a claim created earlier",
			claims: []claimSpec{
				withStatus(claim("old", 0, 1, "10.0.0.0/8"), map[string]recordedStatus{"10.0.0.0/8": unavailableAt(10)}),
				withStatus(claim("young", 5, 1, "10.1.0.0/16"), map[string]recordedStatus{"10.1.0.0/16": allocatedAt(12)}),
				withStatus(claim("older", -5, 2, "10.1.2.0/24", "10.2.0.0/16"), map[string]recordedStatus{"10.1.2.0/24": unavailableAt(20)}),
			},
			// Only news is reported: old and older's first record were
			// recorded Unavailable and still are.
			want: []string{"Allocated older 10.2.0.0/16"},
			wantRecords: map[string]string{
				"old 10.0.0.0/8":    "Unavailable @10s, 10.1.0.0/16 held by young",
				"young 10.1.0.0/16": "Allocated @12s",
				"older 10.1.2.0/24": "Unavailable @20s, 10.1.0.0/16 held by young",
				"older 10.2.0.0/16": "Allocated @100s",
			},
		},
		{
			name: "records without status are decided, and reported, even when unavailable",
			claims: []claimSpec{
				claim("old", 0, 1, "10.0.0.0/8"),
				withStatus(claim("young", 5, 1, "10.1.0.0/16"), map[string]recordedStatus{"10.1.0.0/16": allocatedAt(12)}),
			},
			want: []string{"Unavailable old 10.0.0.0/8, 10.1.0.0/16 held by young"},
			wantRecords: map[string]string{
				"old 10.0.0.0/8":    "Unavailable @100s, 10.1.0.0/16 held by young",
				"young 10.1.0.0/16": "Allocated @12s",
			},
		},
		{
			name: "records that waited go before undecided ones, even when a past leader's clock ran ahead",
			claims: []claimSpec{
				claim("undecided", 0, 1, "10.0.0.0/24"),
				withStatus(claim("waiter", 5, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": unavailableAt(200)}),
			},
			want: []string{"Allocated waiter 10.0.0.0/16", "Unavailable undecided 10.0.0.0/24, 10.0.0.0/16 held by waiter"},
			wantRecords: map[string]string{
				"undecided 10.0.0.0/24": "Unavailable @100s, 10.0.0.0/16 held by waiter",
				"waiter 10.0.0.0/16":    "Allocated @100s",
			},
		},
		{
			name: "overlapping recorded allocations: the earlier date stands, the other is decided again",
			claims: []claimSpec{
				withStatus(claim("a", 0, 1, "10.0.0.0/8"), map[string]recordedStatus{"10.0.0.0/8": allocatedAt(10)}),
				withStatus(claim("b", 5, 1, "10.1.0.0/16"), map[string]recordedStatus{"10.1.0.0/16": allocatedAt(7)}),
			},
			want: []string{"Unavailable a 10.0.0.0/8, 10.1.0.0/16 held by b"},
			wantRecords: map[string]string{
				"a 10.0.0.0/8":  "Unavailable @100s, 10.1.0.0/16 held by b",
				"b 10.1.0.0/16": "Allocated @7s",
			},
		},
		{
			name: "overlapping recorded allocations of the same date: the older claim stands",
			claims: []claimSpec{
				withStatus(claim("a", 1, 1, "fd00::/8"), map[string]recordedStatus{"fd00::/8": allocatedAt(7)}),
				withStatus(claim("b", 0, 1, "fd00:10:96::/112"), map[string]recordedStatus{"fd00:10:96::/112": allocatedAt(7)}),
			},
			want: []string{"Unavailable a fd00::/8, fd00:10:96::/112 held by b"},
			wantRecords: map[string]string{
				"a fd00::/8":         "Unavailable @100s, fd00:10:96::/112 held by b",
				"b fd00:10:96::/112": "Allocated @7s",
			},
		},
		{
			name: "overlapping recorded allocations of the same date and creation: by name",
			claims: []claimSpec{
				withStatus(claim("b", 0, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": allocatedAt(7)}),
				withStatus(claim("a", 0, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": allocatedAt(7)}),
			},
			want: []string{"Unavailable b 10.0.0.0/16, 10.0.0.0/16 held by a"},
			wantRecords: map[string]string{
				"a 10.0.0.0/16": "Allocated @7s",
				"b 10.0.0.0/16": "Unavailable @100s, 10.0.0.0/16 held by a",
			},
		},
		{
			name: "waiting records are promoted by recorded date, then undecided ones are decided",
			claims: []claimSpec{
				claim("undecided", -10, 1, "10.0.0.0/16"),
				withStatus(claim("later", 3, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": unavailableAt(5)}),
				withStatus(claim("earlier", 4, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": unavailableAt(2)}),
			},
			// later still waits, as recorded: no news.
			want: []string{
				"Allocated earlier 10.0.0.0/16",
				"Unavailable undecided 10.0.0.0/16, 10.0.0.0/16 held by earlier",
			},
			wantRecords: map[string]string{
				"earlier 10.0.0.0/16":   "Allocated @100s",
				"later 10.0.0.0/16":     "Unavailable @5s, 10.0.0.0/16 held by earlier",
				"undecided 10.0.0.0/16": "Unavailable @100s, 10.0.0.0/16 held by earlier",
			},
			after: []op{
				{tick: time.Second, forget: "earlier", forgetUID: "earlier-uid", want: []string{
					"Released earlier 10.0.0.0/16",
					"Allocated later 10.0.0.0/16",
					"Blocker undecided 10.0.0.0/16, 10.0.0.0/16 held by later",
				}},
			},
			wantRecordsAfter: map[string]string{
				"later 10.0.0.0/16":     "Allocated @101s",
				"undecided 10.0.0.0/16": "Unavailable @100s, 10.0.0.0/16 held by later",
			},
		},
		{
			name: "undecided records are decided by claim creation, then name",
			claims: []claimSpec{
				claim("c", 2, 1, "10.0.0.0/16"),
				claim("b", 2, 1, "10.0.0.0/16"),
				claim("a", 3, 1, "10.0.0.0/16"),
			},
			want: []string{
				"Allocated b 10.0.0.0/16",
				"Unavailable c 10.0.0.0/16, 10.0.0.0/16 held by b",
				"Unavailable a 10.0.0.0/16, 10.0.0.0/16 held by b",
			},
			wantRecords: map[string]string{
				"a 10.0.0.0/16": "Unavailable @100s, 10.0.0.0/16 held by b",
				"b 10.0.0.0/16": "Allocated @100s",
				"c 10.0.0.0/16": "Unavailable @100s, 10.0.0.0/16 held by b",
			},
		},
		{
			name: "an allocation decided again waits from now, after recorded waiters",
			claims: []claimSpec{
				withStatus(claim("a", 0, 1, "10.0.0.0/8"), map[string]recordedStatus{"10.0.0.0/8": allocatedAt(10)}),
				withStatus(claim("b", 5, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": allocatedAt(7)}),
				withStatus(claim("c", 9, 1, "10.0.0.0/12"), map[string]recordedStatus{"10.0.0.0/12": unavailableAt(8)}),
			},
			want: []string{"Unavailable a 10.0.0.0/8, 10.0.0.0/16 held by b"},
			wantRecords: map[string]string{
				"a 10.0.0.0/8":  "Unavailable @100s, 10.0.0.0/16 held by b",
				"b 10.0.0.0/16": "Allocated @7s",
				"c 10.0.0.0/12": "Unavailable @8s, 10.0.0.0/16 held by b",
			},
			after: []op{
				{tick: time.Second, forget: "b", forgetUID: "b-uid", want: []string{
					"Released b 10.0.0.0/16",
					"Allocated c 10.0.0.0/12",
					"Blocker a 10.0.0.0/8, 10.0.0.0/12 held by c",
				}},
			},
			wantRecordsAfter: map[string]string{
				"a 10.0.0.0/8":  "Unavailable @100s, 10.0.0.0/12 held by c",
				"c 10.0.0.0/12": "Allocated @101s",
			},
		},
		{
			name: "status of prefixes no longer in spec is ignored",
			claims: []claimSpec{
				withStatus(claim("a", 0, 2, "10.1.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": allocatedAt(1)}),
				claim("b", 1, 1, "10.0.0.0/16"),
			},
			want: []string{"Allocated a 10.1.0.0/16", "Allocated b 10.0.0.0/16"},
			wantRecords: map[string]string{
				"a 10.1.0.0/16": "Allocated @100s",
				"b 10.0.0.0/16": "Allocated @100s",
			},
		},
		{
			name: "restore replaces what the ledger had, and keeps the claims' generations",
			before: []op{
				{sync: claim("gone", 0, 1, "10.0.0.0/8"), want: []string{"Allocated gone 10.0.0.0/8"}},
				{sync: claim("a", 0, 1, "10.1.0.0/16"), want: []string{"Unavailable a 10.1.0.0/16, 10.0.0.0/8 held by gone"}},
			},
			claims: []claimSpec{
				withStatus(claim("a", 0, 3, "10.1.0.0/16"), map[string]recordedStatus{"10.1.0.0/16": allocatedAt(50)}),
			},
			wantRecords: map[string]string{
				"a 10.1.0.0/16": "Allocated @50s",
			},
			after: []op{
				{tick: time.Second, sync: claim("a", 0, 3, "10.2.0.0/16")},
				{tick: time.Second, sync: claim("a", 0, 4, "10.1.0.0/16", "10.2.0.0/16"), want: []string{"Allocated a 10.2.0.0/16"}},
				{tick: time.Second, forget: "gone", forgetUID: "gone-uid"},
			},
			wantRecordsAfter: map[string]string{
				"a 10.1.0.0/16": "Allocated @50s",
				"a 10.2.0.0/16": "Allocated @102s",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			l := newLedger(clock.now)
			runOps(t, l, clock, tc.before)
			clock.t = at(restoreAt)
			if got := formatChanges(l.restore(tc.claims)); !slices.Equal(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
				t.Errorf("restore: unexpected changes (-got +want):\n%s", diff.Diff(got, tc.want))
			}
			checkRecords(t, l, tc.wantRecords)
			if tc.after == nil {
				return
			}
			runOps(t, l, clock, tc.after)
			checkRecords(t, l, tc.wantRecordsAfter)
		})
	}
}

func TestLedgerCounts(t *testing.T) {
	clock := newFakeClock()
	l := newLedger(clock.now)
	check := func(wantAllocated, wantWaiting int) {
		t.Helper()
		if allocated, waiting := l.counts(); allocated != wantAllocated || waiting != wantWaiting {
			t.Errorf("counts() = (%d, %d), want (%d, %d)", allocated, waiting, wantAllocated, wantWaiting)
		}
	}
	check(0, 0)
	l.sync(claim("a", 0, 1, "10.0.0.0/8", "fd00::/8"))
	check(2, 0)
	l.sync(claim("b", 0, 1, "10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/16"))
	check(3, 2)
	l.sync(claim("c", 0, 1, "10.0.0.0/8"))
	check(3, 3) // two waiting for the same prefix count twice
	l.forget("a", "a-uid")
	// b, the first by name among waiters of the same second and creation,
	// gets 10.0.0.0/8 and 10.1.0.0/16; c still waits.
	check(3, 1)
	l.sync(claim("b", 0, 2, "192.168.0.0/16"))
	check(2, 0)
	l.restore(nil)
	check(0, 0)
}

func TestLedgerRecords(t *testing.T) {
	clock := newFakeClock()
	l := newLedger(clock.now)
	p, q := netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.1.0.0/16")

	if _, _, ok := l.records("a", "a-uid"); ok {
		t.Errorf("records of an unknown claim: ok")
	}
	clock.step(1500 * time.Millisecond)
	l.sync(claim("a", 0, 3, "10.0.0.0/16"))
	seen := clock.now()
	generation, records, ok := l.records("a", "a-uid")
	if !ok || generation != 3 {
		t.Fatalf("records(a) = generation %d, ok %v; want 3, true", generation, ok)
	}
	want := map[netip.Prefix]decision{p: {allocated: true, since: at(1), observed: seen}}
	if !maps.Equal(records, want) {
		t.Errorf("records(a) = %v, want %v", records, want)
	}
	if _, _, ok := l.records("a", "other-uid"); ok {
		t.Errorf("records of another uid: ok")
	}
	// records returns a copy.
	records[p] = decision{}
	delete(records, p)
	if _, records, _ := l.records("a", "a-uid"); !records[p].allocated {
		t.Errorf("changing what records returned changed the ledger")
	}

	// recorded clears the observation times of a generation once.
	if got := l.recorded("a", 2); got != nil {
		t.Errorf("recorded(a, 2) = %v, want nothing: the ledger is at generation 3", got)
	}
	if got := l.recorded("nope", 3); got != nil {
		t.Errorf("recorded(nope, 3) = %v, want nothing", got)
	}
	if got := l.recorded("a", 3); !slices.Equal(got, []time.Time{seen}) {
		t.Errorf("recorded(a, 3) = %v, want [%v]", got, seen)
	}
	if got := l.recorded("a", 3); got != nil {
		t.Errorf("recorded(a, 3) again = %v, want nothing", got)
	}
	if _, records, _ := l.records("a", "a-uid"); !records[p].observed.IsZero() {
		t.Errorf("observed = %v after recorded, want zero", records[p].observed)
	}

	// Only new records are observed; a promotion is not a new observation.
	clock.step(time.Second)
	l.sync(claim("b", 0, 1, "10.0.0.0/16"))
	seenB := clock.now()
	clock.step(time.Second)
	l.sync(claim("a", 0, 4, "10.1.0.0/16"))
	seenQ := clock.now()
	if got := l.recorded("a", 4); !slices.Equal(got, []time.Time{seenQ}) {
		t.Errorf("recorded(a, 4) = %v, want [%v]", got, seenQ)
	}
	if got := l.recorded("b", 1); !slices.Equal(got, []time.Time{seenB}) {
		t.Errorf("recorded(b, 1) = %v, want [%v]: the time b's record was first seen", got, seenB)
	}
	_, records, _ = l.records("a", "a-uid")
	if d := records[q]; !d.allocated || !d.since.Equal(at(3)) {
		t.Errorf("records(a)[%s] = %+v, want allocated since %v", q, d, at(3))
	}

	// After restore only undecided records are observed, from restore.
	clock.step(time.Second)
	restored := clock.now()
	l.restore([]claimSpec{
		withStatus(claim("a", 0, 4, "10.1.0.0/16"), map[string]recordedStatus{"10.1.0.0/16": allocatedAt(3)}),
		withStatus(claim("b", 0, 1, "10.0.0.0/16"), map[string]recordedStatus{"10.0.0.0/16": allocatedAt(3)}),
		claim("c", 0, 1, "10.2.0.0/16"),
	})
	for _, name := range []string{"a", "b"} {
		if got := l.recorded(name, map[string]int64{"a": 4, "b": 1}[name]); got != nil {
			t.Errorf("recorded(%s) after restore = %v, want nothing", name, got)
		}
	}
	if got := l.recorded("c", 1); !slices.Equal(got, []time.Time{restored}) {
		t.Errorf("recorded(c, 1) after restore = %v, want [%v]", got, restored)
	}
}

// The property tests replay random histories of a few claims over a small
// pool of nested IPv4 and IPv6 prefixes.

var prefixPool = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/16"),
	netip.MustParsePrefix("10.1.0.0/16"),
	netip.MustParsePrefix("10.0.0.0/24"),
	netip.MustParsePrefix("10.0.1.0/24"),
	netip.MustParsePrefix("10.1.2.0/24"),
	netip.MustParsePrefix("10.1.2.128/25"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fd00::/8"),
	netip.MustParsePrefix("fd00:1::/32"),
	netip.MustParsePrefix("fd00:1:2::/48"),
	netip.MustParsePrefix("fd00:2::/32"),
}

// event is one step of a random history; restart rebuilds the ledger from
// the status the previous one would have written, as a new leader does.
type event struct {
	op      op
	restart bool
}

func (e event) String() string {
	if e.restart {
		return fmt.Sprintf("restart after %v", e.op.tick)
	}
	return fmt.Sprintf("%v after %v", e.op, e.op.tick)
}

// randomHistory makes n events over a few claims: mostly new generations,
// some stale or repeated ones, recreations under a new uid, deletions
// (some late, of an older uid) and restarts.
func randomHistory(r *rand.Rand, n int) []event {
	type known struct {
		uid        types.UID
		created    int
		generation int64
	}
	names := []string{"a", "b", "c", "d", "e", "f"}
	claims := map[string]*known{}
	uids := 0
	ticks := []time.Duration{0, 0, 300 * time.Millisecond, 700 * time.Millisecond, time.Second, 2500 * time.Millisecond}
	var elapsed time.Duration
	var history []event
	for range n {
		tick := ticks[r.IntN(len(ticks))]
		elapsed += tick
		name := names[r.IntN(len(names))]
		k := claims[name]
		switch x := r.IntN(100); {
		case x < 5:
			history = append(history, event{op: op{tick: tick}, restart: true})
		case x < 25 && k != nil:
			uid := k.uid
			switch r.IntN(10) {
			case 0:
				uid = "stale"
			case 1:
				uid = ""
			}
			history = append(history, event{op: op{tick: tick, forget: name, forgetUID: uid}})
			if uid != "stale" {
				delete(claims, name)
			}
		default:
			if k == nil || r.IntN(15) == 0 {
				uids++
				// Created at a whole second up to 2 s ago, so that claims
				// often share a creation time.
				k = &known{uid: types.UID(fmt.Sprintf("uid-%d", uids)), created: int(elapsed/time.Second) - r.IntN(3), generation: int64(r.IntN(3))}
				claims[name] = k
			}
			switch r.IntN(10) {
			case 0: // stale or repeated
				k.generation -= int64(r.IntN(2))
			default:
				k.generation++
			}
			var prefixes []string
			for _, i := range r.Perm(len(prefixPool))[:1+r.IntN(4)] {
				prefixes = append(prefixes, prefixPool[i].String())
			}
			s := withUID(claim(name, k.created, k.generation, prefixes...), k.uid)
			history = append(history, event{op: op{tick: tick, sync: s}})
		}
	}
	return history
}

// statusOf is the claims as the controller would have stored them: spec
// and recorded decisions.
func statusOf(l *ledger) []claimSpec {
	var claims []claimSpec
	for _, name := range slices.Sorted(maps.Keys(l.claims)) {
		e := l.claims[name]
		s := claimSpec{name: name, uid: e.uid, created: e.created, generation: e.generation, recorded: map[netip.Prefix]recordedStatus{}}
		for _, p := range sortedPrefixes(e.records) {
			d := e.records[p]
			s.prefixes = append(s.prefixes, p)
			s.recorded[p] = recordedStatus{allocated: d.allocated, date: d.since, holder: d.holder, holderPrefix: d.holderPrefix}
		}
		claims = append(claims, s)
	}
	return claims
}

// play runs a history on a fresh ledger, checking the ledger's invariants
// and comparing it with model after every event; it returns every event's
// changes and the records after each event.
func play(t *testing.T, history []event) (changes [][]string, records []map[string]string) {
	t.Helper()
	clock := newFakeClock()
	l := newLedger(clock.now)
	m := &model{claims: map[string]*modelClaim{}}
	for i, e := range history {
		before := allocations(l)
		var got []change
		if e.restart {
			clock.step(e.op.tick)
			status := statusOf(l)
			recordsBefore := withoutObserved(fullRecords(l))
			l = newLedger(clock.now)
			got = l.restore(status)
			// Status the ledger wrote is consistent: rebuilding from it
			// decides nothing anew, and names the same holders.
			if len(got) != 0 {
				t.Errorf("event %d %v: restore from consistent status made changes %v", i, e, formatChanges(got))
			}
			if after := withoutObserved(fullRecords(l)); !maps.Equal(after, recordsBefore) {
				t.Errorf("event %d %v: restore from consistent status changed records:\nbefore %v\nafter  %v", i, e, recordsBefore, after)
			}
		} else {
			got = e.op.apply(l, clock)
			if e.op.forget != "" {
				m.forget(e.op.forget, e.op.forgetUID, clock.now())
			} else {
				m.sync(e.op.sync, clock.now())
			}
		}
		checkInvariants(t, fmt.Sprintf("event %d %v", i, e), l, m, before)
		if t.Failed() {
			t.Fatalf("history so far:\n%s", formatHistory(history[:i+1]))
		}
		changes = append(changes, formatChanges(got))
		records = append(records, fullRecords(l))
	}
	return changes, records
}

// withoutObserved drops the observation times, which restore does not
// keep: they only feed the latency metric.
func withoutObserved(records map[string]string) map[string]string {
	out := make(map[string]string, len(records))
	for k, v := range records {
		v, _, _ = strings.Cut(v, " observed=")
		out[k] = v
	}
	return out
}

func formatHistory(history []event) string {
	var b strings.Builder
	for i, e := range history {
		fmt.Fprintf(&b, "%3d %v\n", i, e)
	}
	return b.String()
}

// allocations is, by claim uid and prefix, the dates of allocated records.
func allocations(l *ledger) map[string]time.Time {
	out := map[string]time.Time{}
	for name, e := range l.claims {
		for p, d := range e.records {
			if d.allocated {
				out[fmt.Sprintf("%s/%s %s", name, e.uid, p)] = d.since
			}
		}
	}
	return out
}

// fullRecords is every field of every record, for comparing replays.
func fullRecords(l *ledger) map[string]string {
	out := map[string]string{}
	for name, e := range l.claims {
		generation, records, _ := l.records(name, e.uid)
		for p, d := range records {
			out[fmt.Sprintf("%s/%s/%d %s", name, e.uid, generation, p)] = fmt.Sprintf("%s observed=%v", formatDecision(d), d.observed)
		}
	}
	return out
}

func checkInvariants(t *testing.T, what string, l *ledger, m *model, before map[string]time.Time) {
	t.Helper()
	type rec struct {
		claim  string
		prefix netip.Prefix
		d      decision
	}
	var all []rec
	byClaim := map[string]map[netip.Prefix]decision{}
	for name, e := range l.claims {
		_, records, ok := l.records(name, e.uid)
		if !ok {
			t.Fatalf("%s: records(%s, %s) does not know a claim the ledger holds", what, name, e.uid)
		}
		byClaim[name] = records
		for p, d := range records {
			all = append(all, rec{name, p, d})
		}
	}
	var allocated, waiting int
	for i, a := range all {
		if !a.d.allocated {
			waiting++
			// A waiting record names an allocation of another claim that
			// overlaps it.
			h, ok := byClaim[a.d.holder][a.d.holderPrefix]
			if a.d.holder == a.claim || !ok || !h.allocated || !a.d.holderPrefix.Overlaps(a.prefix) {
				t.Errorf("%s: %s %s waits for %s held by %s, which is not an overlapping allocation of another claim", what, a.claim, a.prefix, a.d.holderPrefix, a.d.holder)
			}
			continue
		}
		allocated++
		for _, b := range all[i+1:] {
			if b.d.allocated && b.claim != a.claim && a.prefix.Overlaps(b.prefix) {
				t.Errorf("%s: %s %s and %s %s are both allocated", what, a.claim, a.prefix, b.claim, b.prefix)
			}
		}
	}
	if gotAllocated, gotWaiting := l.counts(); gotAllocated != allocated || gotWaiting != waiting {
		t.Errorf("%s: counts() = (%d, %d), want (%d, %d)", what, gotAllocated, gotWaiting, allocated, waiting)
	}
	// Sticky: what was allocated and is still in the spec of the same
	// claim still is, since the same date.
	for _, a := range all {
		k := fmt.Sprintf("%s/%s %s", a.claim, l.claims[a.claim].uid, a.prefix)
		if since, ok := before[k]; ok && (!a.d.allocated || !a.d.since.Equal(since)) {
			t.Errorf("%s: %s was allocated since %v and is now %s", what, k, offset(since), formatDecision(a.d))
		}
	}
	// The ledger decides as the rules, applied naively, do.
	if got, want := decisions(l), m.decisions(); !maps.Equal(got, want) {
		t.Errorf("%s: the ledger differs from the model (-ledger +model):\n%s", what, diff.Diff(got, want))
	}
}

// decisions is every record as "<claim>/<uid>/<generation> <prefix>" to its
// status and date.
func decisions(l *ledger) map[string]string {
	out := map[string]string{}
	for name, e := range l.claims {
		for p, d := range e.records {
			out[fmt.Sprintf("%s/%s/%d %s", name, e.uid, e.generation, p)] = fmt.Sprintf("allocated=%v @%s", d.allocated, offset(d.since))
		}
	}
	return out
}

// model applies the rules as plainly as they are written: after anything
// is released, every waiting record, first come first served, is
// allocated if nothing of another claim overlaps it.
type model struct {
	claims map[string]*modelClaim
}

type modelClaim struct {
	uid        types.UID
	created    time.Time
	generation int64
	records    map[netip.Prefix]*modelRecord
}

type modelRecord struct {
	allocated bool
	since     time.Time
}

func (m *model) blocked(name string, p netip.Prefix) bool {
	for other, c := range m.claims {
		if other == name {
			continue
		}
		for q, r := range c.records {
			if r.allocated && q.Overlaps(p) {
				return true
			}
		}
	}
	return false
}

func (m *model) promoteAll(now time.Time) {
	type waiter struct {
		name string
		p    netip.Prefix
	}
	var waiters []waiter
	for name, c := range m.claims {
		for p, r := range c.records {
			if !r.allocated {
				waiters = append(waiters, waiter{name, p})
			}
		}
	}
	slices.SortFunc(waiters, func(a, b waiter) int {
		ca, cb := m.claims[a.name], m.claims[b.name]
		return cmp.Or(
			ca.records[a.p].since.Compare(cb.records[b.p].since),
			ca.created.Compare(cb.created),
			strings.Compare(a.name, b.name),
			a.p.Compare(b.p),
		)
	})
	for _, w := range waiters {
		if !m.blocked(w.name, w.p) {
			r := m.claims[w.name].records[w.p]
			r.allocated, r.since = true, now.Truncate(time.Second)
		}
	}
}

func (m *model) forget(name string, uid types.UID, now time.Time) {
	c, ok := m.claims[name]
	if !ok || (uid != "" && uid != c.uid) {
		return
	}
	delete(m.claims, name)
	m.promoteAll(now)
}

func (m *model) sync(s claimSpec, now time.Time) {
	c, ok := m.claims[s.name]
	if ok && c.uid != s.uid {
		m.forget(s.name, "", now)
		ok = false
	}
	if ok && s.generation <= c.generation {
		return
	}
	if !ok {
		c = &modelClaim{uid: s.uid, created: s.created, records: map[netip.Prefix]*modelRecord{}}
		m.claims[s.name] = c
	}
	c.generation = s.generation
	for p := range c.records {
		if !slices.Contains(s.prefixes, p) {
			delete(c.records, p)
		}
	}
	m.promoteAll(now)
	for _, p := range s.prefixes {
		if _, ok := c.records[p]; ok {
			continue
		}
		c.records[p] = &modelRecord{allocated: !m.blocked(s.name, p), since: now.Truncate(time.Second)}
	}
}

func (m *model) decisions() map[string]string {
	out := map[string]string{}
	for name, c := range m.claims {
		for p, r := range c.records {
			out[fmt.Sprintf("%s/%s/%d %s", name, c.uid, c.generation, p)] = fmt.Sprintf("allocated=%v @%s", r.allocated, offset(r.since))
		}
	}
	return out
}

func TestLedgerRandomHistories(t *testing.T) {
	for seed := range uint64(25) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			history := randomHistory(rand.New(rand.NewPCG(seed, 0x6c656467)), 300)
			changes, records := play(t, history)
			// The same history gives the same ledger, decision by decision.
			replayedChanges, replayedRecords := play(t, history)
			for i := range history {
				if !slices.Equal(changes[i], replayedChanges[i]) {
					t.Fatalf("event %d %v: replay changed %v, first play %v", i, history[i], replayedChanges[i], changes[i])
				}
				if !maps.Equal(records[i], replayedRecords[i]) {
					t.Fatalf("event %d %v: replay differs (-first +replay):\n%s", i, history[i], diff.Diff(records[i], replayedRecords[i]))
				}
			}
		})
	}
}
