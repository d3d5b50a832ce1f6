package registrycli

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// uiView is what registry ui shows, built from the registry at one moment
// and never changed after: the handlers answer every request from the
// latest one, without a lock and without walking the registry again. A
// view is built after the registry changes, at most every few hundred
// milliseconds (uiServer.follow), so that the cost of a build, which grows
// with the number of claims, is paid once per change rather than per
// request.
type uiView struct {
	// version counts the views the server built; the page asks again
	// when it learns of a newer one.
	version uint64
	built   time.Time
	// state is uiStateReady when the registry was read; else problem says
	// why not.
	state   string
	problem *uiProblem
	// stale says why the view may be behind the control plane: it has not
	// answered since; empty while it answers.
	stale string

	nClaims  int
	pools    []uiPool
	registry *networkregistry.Registry

	// allocs are every allocation, in prefix order; the rest index it:
	// allocations by claimed prefix, roots the allocations delegated from
	// none the registry holds, and children those delegated from each
	// allocation, both in prefix order. Indexes, not copies: a view of
	// 100,000 claims is built after every change.
	allocs      []networkregistry.Allocation
	allocations map[networkregistry.ClaimedPrefix]int32
	roots       []int32
	children    map[networkregistry.ClaimedPrefix][]int32
	// waiting are the records not allocated (Unavailable or Pending) by
	// claim name, then prefix; waitingOn the indexes into it of those that
	// wait for an allocation (its space, or room in it).
	waiting   []uiRecord
	waitingOn map[networkregistry.ClaimedPrefix][]int
}

// Views' states.
const (
	uiStateConnecting = "Connecting"
	uiStateReady      = "Ready"
	uiStateProblem    = "Problem"
)

// uiProblem says why the registry cannot be shown, and what to do.
type uiProblem struct {
	// Reason is Forbidden, Unauthorized, NotServed or Unreachable.
	Reason  string `json:"reason"`
	Title   string `json:"title"`
	Message string `json:"message"`
	// Needed is, for Forbidden, the rules the user lacks; Grant a command
	// an administrator can run to grant them.
	Needed string `json:"needed,omitempty"`
	Grant  string `json:"grant,omitempty"`
	// Error is the server's answer, as it was.
	Error string `json:"error"`
}

// uiPool is a pool as the page's pools table shows it: the columns of
// registry pools, and what the utilization bar needs.
type uiPool struct {
	Claim       string `json:"claim"`
	Name        string `json:"name,omitempty"`
	Prefix      string `json:"prefix"`
	Description string `json:"description,omitempty"`
	Reference   string `json:"reference"`
	poolColumns
	// TenantNames are the first tenants, all of them up to uiMaxTenants.
	TenantNames []string `json:"tenantNames"`
	TenantCount int      `json:"tenantCount"`
	// Bar is the share of each state in percent, for pools whose size a
	// bar shows honestly; nil for a larger (IPv6) pool, or while the
	// registry has not counted it.
	Bar *uiBar `json:"bar,omitempty"`
	// Blocks is, for a pool too large for a bar, its use in /64s (IPv6
	// subnets), or in addresses for a pool smaller than a /64, exactly as
	// the registry counted it.
	Blocks *uiBlocks `json:"blocks,omitempty"`
	// Summary says the same as the bar or the blocks in words: the bar's
	// text alternative.
	Summary string `json:"summary"`
}

// uiBar is a pool's addresses by state, in percent of its size.
type uiBar struct {
	Allocated float64 `json:"allocated"`
	Reserved  float64 `json:"reserved"`
	Cooling   float64 `json:"cooling"`
	Free      float64 `json:"free"`
}

// uiBlocks is a pool's use counted in blocks of a prefix length.
type uiBlocks struct {
	// Length is the blocks' prefix length: 64, or 128 (addresses).
	Length int `json:"length"`
	// Used is how many blocks' worth of addresses are allocated, reserved
	// or cooling, and Total how many the pool holds, as addressCount
	// writes them.
	Used  string `json:"used"`
	Total string `json:"total"`
	// Percent is the used share with three significant digits, e.g.
	// "0.00153%".
	Percent string `json:"percent"`
}

// uiMaxTenants is how many tenants of a pool the pools table names.
const uiMaxTenants = 20

// uiBarMaxAddresses is the largest pool shown as a bar: every IPv4 pool,
// and IPv6 pools of /96 or longer. Beyond, a bar of addresses would stay
// empty long after the pool had thousands of /64s taken from it.
var uiBarMaxAddresses = new(big.Int).Lsh(big.NewInt(1), 32)

// uiBlockLength is the prefix length larger pools are counted in: an IPv6
// subnet.
const uiBlockLength = 64

// uiRecord is a record as the page shows it: list's row, and for a record
// that is not allocated, what it waits for.
type uiRecord struct {
	registryRecord
	// WaitsFor is the allocation the record waits for: the one it
	// overlaps, or the pool it asks room in (Prefix empty: the claim's
	// first pool). Nil while it is pending, or for a reason that names
	// none.
	WaitsFor *uiTarget `json:"waitsFor,omitempty"`
}

// uiTarget names an allocation, or a claim's pools when Prefix is empty.
type uiTarget struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix,omitempty"`
}

// buildView reads the registry into a view.
func buildView(r *networkregistry.Registry, version uint64) *uiView {
	v := &uiView{
		version: version, built: time.Now(), state: uiStateReady, registry: r,
		children:  map[networkregistry.ClaimedPrefix][]int32{},
		waitingOn: map[networkregistry.ClaimedPrefix][]int{},
	}
	allocations := r.Allocations()
	v.allocs = allocations
	v.allocations = make(map[networkregistry.ClaimedPrefix]int32, len(allocations))
	for i, a := range allocations {
		v.allocations[claimedPrefix(a)] = int32(i)
	}
	// Allocations come in prefix order: so do each parent's children.
	for i, a := range allocations {
		if from := a.DelegatedFrom; from != nil {
			if _, held := v.allocations[*from]; held {
				v.children[*from] = append(v.children[*from], int32(i))
				continue
			}
		}
		v.roots = append(v.roots, int32(i))
	}
	for _, p := range r.Pools() {
		v.pools = append(v.pools, uiPoolOf(p))
	}
	// The first pool of each claim, for records that name no prefix.
	firstPool := map[string]networkregistry.ClaimedPrefix{}
	for _, p := range v.pools {
		if _, ok := firstPool[p.Claim]; !ok {
			firstPool[p.Claim] = networkregistry.ClaimedPrefix{Claim: p.Claim, Prefix: netip.MustParsePrefix(p.Prefix)}
		}
	}
	// Every claim has a record, allocated or waiting.
	names := sets.New[string]()
	for _, a := range allocations {
		names.Insert(a.Claim)
	}
	waiting := r.Waiting()
	for _, w := range waiting {
		names.Insert(w.Claim)
	}
	v.nClaims = names.Len()
	// One claim's records in prefix order, as registry list shows them.
	rows := make([]prefixRecord, 0, len(waiting))
	for _, w := range waiting {
		rows = append(rows, prefixRecord{decisionRecord(w.Claim, w.Decision)})
	}
	slices.SortStableFunc(rows, func(a, b prefixRecord) int {
		return cmp.Or(strings.Compare(a.Claim, b.Claim), a.prefix().Compare(b.prefix()))
	})
	for _, row := range rows {
		rec := uiRecord{registryRecord: row.registryRecord, WaitsFor: waitsFor(row.registryRecord)}
		if t := rec.WaitsFor; t != nil {
			key, ok := firstPool[t.Claim], t.Prefix == ""
			if !ok {
				if p, err := netip.ParsePrefix(t.Prefix); err == nil {
					key, ok = networkregistry.ClaimedPrefix{Claim: t.Claim, Prefix: p.Masked()}, true
				}
			}
			if _, held := v.allocations[key]; ok && held {
				v.waitingOn[key] = append(v.waitingOn[key], len(v.waiting))
			}
		}
		v.waiting = append(v.waiting, rec)
	}
	return v
}

// withStale returns a copy of the view, of another version, that says
// why it may be behind the control plane ("" when it is not).
func (v *uiView) withStale(version uint64, stale string) *uiView {
	out := *v
	out.version, out.stale = version, stale
	return &out
}

// problemView is a view that shows a problem instead of the registry.
func problemView(version uint64, state string, problem *uiProblem) *uiView {
	return &uiView{version: version, built: time.Now(), state: state, problem: problem}
}

func claimedPrefix(a networkregistry.Allocation) networkregistry.ClaimedPrefix {
	return networkregistry.ClaimedPrefix{Claim: a.Claim, Prefix: a.Prefix}
}

// waitsFor is what a record that is not allocated waits for: the
// allocation it overlaps, or the pool it asks room in.
func waitsFor(r registryRecord) *uiTarget {
	if r.Status != string(v1alpha1.AllocationUnavailable) {
		return nil
	}
	if c := r.ConflictsWith; c != nil {
		return &uiTarget{Claim: c.Claim, Prefix: c.Prefix}
	}
	if f := r.From; f != nil {
		return &uiTarget{Claim: f.Claim, Prefix: f.Prefix}
	}
	return nil
}

// uiPoolOf writes a pool for the page, its figures as registry pools
// writes them.
func uiPoolOf(p networkregistry.Pool) uiPool {
	out := uiPool{
		Claim: p.Claim, Name: p.Name, Prefix: p.Prefix.String(), Description: p.Description,
		Reference: referenceString(p.Reference), poolColumns: poolColumnsOf(p),
		TenantNames: p.Tenants[:min(len(p.Tenants), uiMaxTenants)], TenantCount: len(p.Tenants),
	}
	if out.TenantNames == nil {
		out.TenantNames = []string{}
	}
	u := p.Utilization
	if u == nil {
		out.Summary = "not counted by the registry yet"
		return out
	}
	if u.Size.Cmp(uiBarMaxAddresses) <= 0 {
		out.Bar = &uiBar{
			Allocated: percentOf(u.Allocated, u.Size), Reserved: percentOf(u.Reserved, u.Size),
			Cooling: percentOf(u.Cooling, u.Size), Free: percentOf(u.Free, u.Size),
		}
		out.Summary = joinSummary(out.Used+" used", addressCount(u.Allocated)+" allocated", addressCount(u.Reserved)+" reserved",
			addressCount(u.Cooling)+" cooling", addressCount(u.Free)+" free", "of "+addressCount(u.Size)+" addresses")
		return out
	}
	// A pool of several /64s counts in /64s, the IPv6 subnet; a /64 or
	// smaller (to /95) in addresses: either way exactly, no bar.
	length := p.Prefix.Addr().BitLen()
	if p.Prefix.Bits() < uiBlockLength {
		length = uiBlockLength
	}
	used := new(big.Int).Sub(u.Size, u.Free)
	shift := uint(p.Prefix.Addr().BitLen() - length)
	out.Blocks = &uiBlocks{
		Length:  length,
		Used:    addressCount(new(big.Int).Rsh(used, shift)),
		Total:   addressCount(new(big.Int).Rsh(u.Size, shift)),
		Percent: percentString(used, u.Size),
	}
	unit := fmt.Sprintf("/%ds", length)
	if length == p.Prefix.Addr().BitLen() {
		unit = "addresses"
	}
	out.Summary = joinSummary(out.Blocks.Used+" of "+out.Blocks.Total+" "+unit+" in use ("+out.Blocks.Percent+")",
		addressCount(u.Allocated)+" addresses allocated", addressCount(u.Reserved)+" reserved", addressCount(u.Cooling)+" cooling")
	return out
}

// percentString writes n of total in percent with three significant
// digits and no exponent, however small: 0.00458%, 0.0000000233%.
func percentString(n, total *big.Int) string {
	p := percentOf(n, total)
	if p == 0 {
		return "0%"
	}
	// The decimals that leave three significant digits.
	decimals := max(0, 2-int(math.Floor(math.Log10(p))))
	return strconv.FormatFloat(p, 'f', decimals, 64) + "%"
}

// percentOf is n in percent of total.
func percentOf(n, total *big.Int) float64 {
	f, _ := new(big.Float).Quo(new(big.Float).SetInt(n), new(big.Float).SetInt(total)).Float64()
	return f * 100
}

func joinSummary(parts ...string) string { return strings.Join(parts, ", ") }

// page returns items[offset:offset+limit], clamped.
func page[T any](items []T, offset, limit int) []T {
	offset = min(max(offset, 0), len(items))
	return items[offset:min(offset+limit, len(items))]
}

// indexOf returns where the allocation key is in list, indexes of
// v.allocs in prefix order then by claim.
func (v *uiView) indexOf(list []int32, key networkregistry.ClaimedPrefix) (int, bool) {
	return slices.BinarySearchFunc(list, key, func(i int32, k networkregistry.ClaimedPrefix) int {
		a := v.allocs[i]
		return cmp.Or(a.Prefix.Compare(k.Prefix), strings.Compare(a.Claim, k.Claim))
	})
}
