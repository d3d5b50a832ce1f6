package registrycli

import (
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

func newRegistryPoolsCommand() *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "pools [--kubeconfig=FILE]",
		Short: "List every pool (allocated delegable prefix): how full it is, its tenants and its policy",
		Long: `Lists every allocated delegable prefix (a pool, which other claims take sub-prefixes of), by
claim, with how full the registry says it is and who took from it:

  USED          the part first fit cannot hand out (allocated, reserved or cooling), rounded down
  ALLOCATED     addresses of the allocations inside the pool
  RESERVED      addresses of its reservations not allocated
  FREE          addresses first fit may hand out
  LARGEST FREE  the largest free block, the lowest of those as large; <none> when nothing is free
  SUB-PREFIXES  the allocated records taken from the pool
  TENANTS       the claims that hold them, by name (the first 3, then +N more)
  POLICY        e.g. "/16-/24, 2 per claim, 1 reserved, grace 1h": the lengths handed out, the
                records one claim may hold, the reservations and the reuse grace period

Address counts are exact below 1,000,000; above, they have three significant digits: M
(millions) and G (billions) up to 10^12, which covers every IPv4 pool (a /0 holds 4.29G), and
scientific notation beyond, for IPv6: a /32 holds 2^96 addresses, 7.92e28. The figures are "-"
while the registry has not written the pool's utilization (it has not caught up yet, or the
server is older than pool utilization). -o json and -o yaml print the pools as an array, with
the policy and utilization as the API writes them (address counts as exact decimal strings),
the sub-prefixes and the tenants.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			r, err := o.start(cmd.Context())
			if err != nil {
				return err
			}
			pools := r.Pools()
			if o.output != "" {
				return printObject(cmd.OutOrStdout(), o.output, poolRecords(pools))
			}
			if len(pools) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No NetworkClaim holds an allocated delegable prefix")
				return nil
			}
			return printPools(cmd.OutOrStdout(), pools)
		},
	}
	o.addFlags(cmd, registryFlags{output: true})
	return cmd
}

// poolRecord is one pool, an element of pools' JSON and YAML output: the
// policy and utilization in the API's own form, so that address counts stay
// exact strings.
type poolRecord struct {
	Claim         string                      `json:"claim"`
	Name          string                      `json:"name,omitempty"`
	Prefix        string                      `json:"prefix"`
	Reference     *v1alpha1.ResourceReference `json:"reference,omitempty"`
	Description   string                      `json:"description,omitempty"`
	DelegatedFrom *v1alpha1.ClaimedPrefix     `json:"delegatedFrom,omitempty"`
	Policy        *v1alpha1.PoolPolicy        `json:"policy,omitempty"`
	// Utilization is absent while the registry has not written it.
	Utilization *v1alpha1.PoolStatus     `json:"utilization,omitempty"`
	SubPrefixes []v1alpha1.ClaimedPrefix `json:"subPrefixes"`
	Tenants     []string                 `json:"tenants"`
}

// poolRecords returns the pools as pools' JSON and YAML print them; [] for
// none.
func poolRecords(pools []networkregistry.Pool) []poolRecord {
	out := make([]poolRecord, 0, len(pools))
	for _, p := range pools {
		r := poolRecord{
			Claim: p.Claim, Name: p.Name, Prefix: p.Prefix.String(), Reference: p.Reference, Description: p.Description,
			Policy: apiPolicy(p.Policy), Utilization: apiUtilization(p.Utilization),
			SubPrefixes: make([]v1alpha1.ClaimedPrefix, 0, len(p.SubPrefixes)), Tenants: p.Tenants,
		}
		if r.Tenants == nil {
			r.Tenants = []string{}
		}
		if from := p.DelegatedFrom; from != nil {
			r.DelegatedFrom = &v1alpha1.ClaimedPrefix{Claim: from.Claim, Prefix: from.Prefix.String()}
		}
		for _, a := range p.SubPrefixes {
			r.SubPrefixes = append(r.SubPrefixes, v1alpha1.ClaimedPrefix{Claim: a.Claim, Prefix: a.Prefix.String()})
		}
		out = append(out, r)
	}
	return out
}

// apiPolicy is the policy as the claim's spec writes it.
func apiPolicy(policy *networkregistry.PoolPolicy) *v1alpha1.PoolPolicy {
	if policy == nil {
		return nil
	}
	optional := func(n int) *int32 {
		if n == 0 {
			return nil
		}
		v := int32(n)
		return &v
	}
	out := &v1alpha1.PoolPolicy{
		MinPrefixLength:    optional(policy.MinPrefixLength),
		MaxPrefixLength:    optional(policy.MaxPrefixLength),
		MaxRecordsPerClaim: optional(policy.MaxRecordsPerClaim),
	}
	for _, r := range policy.Reservations {
		out.Reservations = append(out.Reservations, v1alpha1.PoolReservation{Prefix: r.Prefix.String(), Description: r.Description})
	}
	if d := policy.ReuseGracePeriod; d != 0 {
		seconds := int64(d / time.Second)
		out.ReuseGracePeriodSeconds = &seconds
	}
	return out
}

// apiUtilization is the utilization as the registry writes it in status.
func apiUtilization(u *networkregistry.PoolUtilization) *v1alpha1.PoolStatus {
	if u == nil {
		return nil
	}
	out := &v1alpha1.PoolStatus{
		Addresses: u.Size.String(), Allocated: u.Allocated.String(), Reserved: u.Reserved.String(), Cooling: u.Cooling.String(), Free: u.Free.String(),
		UsedPercent: int32(u.UsedPercent), SubPrefixes: int32(u.SubPrefixes), Tenants: int32(u.Tenants),
	}
	if u.LargestFreePrefix.IsValid() {
		out.LargestFreePrefix = u.LargestFreePrefix.String()
	}
	for _, c := range u.CoolingPrefixes {
		out.CoolingPrefixes = append(out.CoolingPrefixes, v1alpha1.CoolingPrefix{Prefix: c.Prefix.String(), Claim: c.Claim, ReusableAt: metav1.NewTime(c.ReusableAt)})
	}
	return out
}

// printPools writes the pools as pools' table.
func printPools(w io.Writer, pools []networkregistry.Pool) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "CLAIM\tPREFIX\tUSED\tALLOCATED\tRESERVED\tFREE\tLARGEST FREE\tSUB-PREFIXES\tTENANTS\tPOLICY")
	for _, p := range pools {
		c := poolColumnsOf(p)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Claim, p.Prefix, c.Used, c.Allocated, c.Reserved, c.Free, c.LargestFree, c.SubPrefixes,
			c.Tenants, c.Policy)
	}
	return tw.Flush()
}

// poolColumns are the figures of a pool as pools' table writes them, and
// as registry ui shows them: one function, so that both agree.
type poolColumns struct {
	Used        string `json:"used"`
	Allocated   string `json:"allocated"`
	Reserved    string `json:"reserved"`
	Free        string `json:"free"`
	LargestFree string `json:"largestFree"`
	SubPrefixes string `json:"subPrefixes"`
	Tenants     string `json:"tenants"`
	Policy      string `json:"policy"`
}

// poolColumnsOf writes a pool's figures. Those the registry has not written
// are "-"; what is known to be nothing is "<none>".
func poolColumnsOf(p networkregistry.Pool) poolColumns {
	c := poolColumns{Used: "-", Allocated: "-", Reserved: "-", Free: "-", LargestFree: "-", SubPrefixes: "-",
		Tenants: tenantsString(p.Tenants), Policy: orNone(policyString(apiPolicy(p.Policy), p.Prefix))}
	if u := p.Utilization; u != nil {
		c.Used = fmt.Sprintf("%d%%", u.UsedPercent)
		c.Allocated, c.Reserved, c.Free = addressCount(u.Allocated), addressCount(u.Reserved), addressCount(u.Free)
		c.LargestFree = "<none>"
		if u.LargestFreePrefix.IsValid() {
			c.LargestFree = u.LargestFreePrefix.String()
		}
		c.SubPrefixes = strconv.Itoa(u.SubPrefixes)
	}
	return c
}

// million is where address counts stop being exact.
var million = big.NewInt(1_000_000)

// addressCount writes a number of addresses so that IPv4 and IPv6 pools
// read alike: exactly below 1,000,000 (65536); above, with three
// significant digits, in M or G below 10^12 (16.8M, 4.29G: every IPv4
// count), and in scientific notation from there on (7.92e28, an IPv6 /32).
func addressCount(n *big.Int) string {
	if n.Cmp(million) < 0 {
		return n.String()
	}
	// Rounded to three significant digits first, so that 999,999,999
	// reads 1G, not 1000M.
	mantissa, exponent, _ := strings.Cut(new(big.Float).SetInt(n).Text('e', 2), "e")
	exp, _ := strconv.Atoi(exponent)
	if exp >= 12 {
		return trimZeros(mantissa) + "e" + strconv.Itoa(exp)
	}
	unit, shift := "M", exp-6
	if exp >= 9 {
		unit, shift = "G", exp-9
	}
	digits := strings.Replace(mantissa, ".", "", 1)
	return trimZeros(digits[:shift+1]+"."+digits[shift+1:]) + unit
}

// trimZeros drops the trailing zeros of a decimal fraction, and its point
// when nothing follows: 1.50 is 1.5, 1.00 is 1.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// maxTenantsShown is how many tenants pools' table names before "+N more".
const maxTenantsShown = 3

// tenantsString writes the tenants comma-joined, the first few of them.
func tenantsString(tenants []string) string {
	if len(tenants) == 0 {
		return "<none>"
	}
	if len(tenants) <= maxTenantsShown {
		return strings.Join(tenants, ",")
	}
	return fmt.Sprintf("%s +%d more", strings.Join(tenants[:maxTenantsShown], ","), len(tenants)-maxTenantsShown)
}

// policyString writes a pool policy in short, e.g. "/16-/24, 2 per claim,
// 1 reserved, grace 1h"; "" for none. A length range with one bound set
// shows the other as the policy leaves it: one bit longer than the pool,
// or a single address.
func policyString(policy *v1alpha1.PoolPolicy, pool netip.Prefix) string {
	if policy == nil {
		return ""
	}
	var parts []string
	if policy.MinPrefixLength != nil || policy.MaxPrefixLength != nil {
		shortest, longest := pool.Bits()+1, pool.Addr().BitLen()
		if n := policy.MinPrefixLength; n != nil {
			shortest = int(*n)
		}
		if n := policy.MaxPrefixLength; n != nil {
			longest = int(*n)
		}
		parts = append(parts, fmt.Sprintf("/%d-/%d", shortest, longest))
	}
	if n := policy.MaxRecordsPerClaim; n != nil {
		parts = append(parts, fmt.Sprintf("%d per claim", *n))
	}
	if n := len(policy.Reservations); n > 0 {
		parts = append(parts, fmt.Sprintf("%d reserved", n))
	}
	if n := policy.ReuseGracePeriodSeconds; n != nil && *n > 0 {
		parts = append(parts, "grace "+gracePeriodString(time.Duration(*n)*time.Second))
	}
	return strings.Join(parts, ", ")
}

// gracePeriodString writes a grace period in its largest whole units: 1h,
// 1h30m, 90s as 1m30s, 7 days as 7d.
func gracePeriodString(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// orNone writes "<none>" for an empty cell that means nothing.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
