package registrycli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/apis/networking/validation"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// claimFieldManager is the default field manager of the records that
// registry claim applies with PREFIX arguments.
const claimFieldManager = "registry-claim"

// claimOptions are the flags of registry claim.
type claimOptions struct {
	registryOptions
	from         string
	fromPrefix   string
	prefixLength int
	name         string
	delegable    bool
	reference    string
	description  string
	fieldManager string

	// The pool policy of delegable records.
	minPrefixLength    int
	maxPrefixLength    int
	maxRecordsPerClaim int
	reserve            []string
	reuseGracePeriod   time.Duration
}

// policyFlags are the flags that set the pool policy, in the order they are
// named when one is given without --delegable.
var policyFlags = []string{"min-prefix-length", "max-prefix-length", "max-records-per-claim", "reserve", "reuse-grace-period"}

func newRegistryClaimCommand() *cobra.Command {
	o := &claimOptions{}
	cmd := &cobra.Command{
		Use:   "claim NAME PREFIX... | claim NAME --from CLAIM --prefix-length N [--name RECORD]",
		Short: "Claim prefixes, or take one from a delegable prefix, and wait for the registry's decision",
		Long: `Creates or updates the NetworkClaim NAME and waits for the registry's decision on it.

  registry claim org-pods 10.0.0.0/8 fd00::/32 --delegable
      claims the prefixes given; --delegable lets other claims take sub-prefixes of them.
  registry claim cluster-a --from org-pods --prefix-length 16 --name pods-v4
      takes the lowest free /16 of org-pods' delegable prefixes: the registry chooses it.
      --from-prefix fd00::/32 picks which of org-pods' delegable prefixes to take it from.
  registry claim cluster-a 10.5.0.0/16 --from org-pods
      claims 10.5.0.0/16 as a sub-prefix delegated by org-pods, which it does not conflict with.
  registry claim org-pods 10.0.0.0/8 --delegable --min-prefix-length 16 --max-prefix-length 24 \
      --max-records-per-claim 2 --reserve 10.255.0.0/16=infrastructure --reuse-grace-period 1h
      sets how the delegable records hand out their space: sub-prefixes of /16 to /24, at most
      2 records per claim, 10.255.0.0/16 left alone by first fit, and a released sub-prefix rests
      an hour before another claim gets it. The policy flags go with --delegable and apply to
      every PREFIX; a record that breaks the policy waits, Unavailable with the reason PoolPolicy.

It applies the records by server-side apply with field manager --field-manager: they replace
the records that an earlier run with the same field manager applied to NAME, and records
applied by others stay. The default field manager is "registry-claim" for PREFIX arguments,
and "registry-claim-RECORD" for a record taken from a pool, so that each such record (each
--name) is claimed, and changed, on its own.

It prints one row per record of the claim: its name, its prefix (for a record taken from a
pool, the one the registry chose), and the decision: Allocated, or Unavailable with the reason
(Conflict, PoolExhausted, PoolNotFound, PoolPolicy, ReuseGracePeriod) and why; DETAILS shows a
delegable record's policy. -o json or -o yaml prints the NetworkClaim instead, status included.

It exits 0 when every record of the claim is allocated. It exits 1, after printing, when some
record is Unavailable: the claim stays, and the registry allocates the record when the space
it waits for is free, or for PoolPolicy when it fits the pool's policy, or for
ReuseGracePeriod when the released prefix has rested (registry release NAME withdraws it); and
it exits 1 when the registry has not decided within --timeout, as kubectl wait does.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("claim takes the NetworkClaim's name first, e.g. claim cluster-a 10.96.0.0/12 or claim cluster-a --from org-pods --prefix-length 16")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			records, fieldManager, err := o.records(args, cmd.Flags())
			if err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout(), args[0], records, fieldManager)
		},
	}
	o.addFlags(cmd, registryFlags{
		timeout: "How long to wait for the registry's decision on the claim before giving up.",
		output:  true,
		own: func(fss *cliflag.NamedFlagSets) {
			record := fss.FlagSet("record")
			record.StringVar(&o.from, "from", "", "Take the record from a delegable prefix of this NetworkClaim: with --prefix-length, any free prefix of that length; with PREFIX arguments, those sub-prefixes.")
			record.StringVar(&o.fromPrefix, "from-prefix", "", "Which delegable prefix of --from to take from, e.g. 10.0.0.0/8. Defaults to the first, in its spec order, with room.")
			record.IntVar(&o.prefixLength, "prefix-length", 0, "Let the registry choose a free prefix of this length inside --from's delegable prefix, e.g. 16 for a /16.")
			record.StringVar(&o.name, "name", "", "The record's name, e.g. pods-v4: a DNS label. Defaults, for a record taken with --prefix-length, to the --from claim's name.")
			record.BoolVar(&o.delegable, "delegable", false, "Let other claims take sub-prefixes of the records (with --from NAME).")
			record.StringVar(&o.reference, "reference", "", "The resource the range is for, as RESOURCE or RESOURCE.GROUP, e.g. pods, services or servicecidrs.networking.k8s.io.")
			record.StringVar(&o.description, "description", "", "What the range is for, in at most 255 characters.")
			pool := fss.FlagSet("pool policy")
			pool.IntVar(&o.minPrefixLength, "min-prefix-length", 0, "The shortest sub-prefix handed out, that is the largest block, e.g. 16: nothing larger than a /16.")
			pool.IntVar(&o.maxPrefixLength, "max-prefix-length", 0, "The longest sub-prefix handed out, that is the smallest block, e.g. 24: nothing smaller than a /24.")
			pool.IntVar(&o.maxRecordsPerClaim, "max-records-per-claim", 0, "How many records one claim may hold from each delegable record, 1 to 64.")
			pool.StringArrayVar(&o.reserve, "reserve", nil, "A range first fit never hands out, as PREFIX or PREFIX=DESCRIPTION, e.g. 10.255.0.0/16=gateways; repeat it for more. A record that names it exactly still gets it.")
			pool.DurationVar(&o.reuseGracePeriod, "reuse-grace-period", 0, "How long a sub-prefix released by one claim rests before another claim gets it, e.g. 1h; at most 720h (30 days), in whole seconds.")
			fss.FlagSet("claim").StringVar(&o.fieldManager, "field-manager", "", `The field manager to apply the records with. Defaults to "registry-claim", or "registry-claim-RECORD" for a record taken with --prefix-length.`)
		},
	})
	return cmd
}

// records reads the arguments and flags into the records to apply and the
// field manager to apply them with, and checks them with the API's
// validation, before anything connects.
func (o *claimOptions) records(args []string, flags *pflag.FlagSet) ([]networkregistry.Record, string, error) {
	if err := o.validate(); err != nil {
		return nil, "", err
	}
	lengthSet := flags.Changed("prefix-length")
	name, prefixArgs := args[0], args[1:]
	// Which arguments go together; what they say is the API's to check.
	switch {
	case len(prefixArgs) == 0 && o.from == "" && !lengthSet:
		return nil, "", fmt.Errorf("nothing to claim: give PREFIX arguments, e.g. claim %s 10.96.0.0/12, or --from CLAIM --prefix-length N to take a prefix from another claim's delegable prefix", name)
	case len(prefixArgs) > 0 && lengthSet:
		return nil, "", fmt.Errorf("--prefix-length asks the registry to choose a prefix, PREFIX arguments name them: give one or the other, e.g. claim %s --from %s --prefix-length %d", name, cmp.Or(o.from, "org-pods"), o.prefixLength)
	case lengthSet && o.from == "":
		return nil, "", fmt.Errorf("--prefix-length needs --from CLAIM, the claim whose delegable prefix to take the /%d from, e.g. --from org-pods --prefix-length %d", o.prefixLength, o.prefixLength)
	case o.from != "" && len(prefixArgs) == 0 && !lengthSet:
		return nil, "", fmt.Errorf("--from %s needs --prefix-length N, to let the registry choose a free prefix, e.g. --prefix-length 16, or PREFIX arguments inside a delegable prefix of %s", o.from, o.from)
	case o.fromPrefix != "" && o.from == "":
		return nil, "", fmt.Errorf("--from-prefix needs --from CLAIM, the claim that holds %s, e.g. --from org-pods --from-prefix %s", o.fromPrefix, o.fromPrefix)
	case o.name != "" && len(prefixArgs) > 1:
		return nil, "", fmt.Errorf("--name names one record, and %d PREFIX arguments make %d: give one PREFIX with --name, or leave --name out", len(prefixArgs), len(prefixArgs))
	case flags.Changed("field-manager") && o.fieldManager == "":
		return nil, "", errors.New("--field-manager must not be empty; leave it out for the default")
	}
	policy, err := o.policy(args, flags)
	if err != nil {
		return nil, "", err
	}
	record := networkregistry.Record{Name: o.name, Delegable: o.delegable, Pool: policy, Reference: parseReference(o.reference), Description: o.description}
	if o.from != "" {
		record.From = &networkregistry.PrefixSource{Claim: o.from}
		if o.fromPrefix != "" {
			p, err := parsePrefixArg("--from-prefix", o.fromPrefix, "10.0.0.0/8")
			if err != nil {
				return nil, "", err
			}
			record.From.Prefix = p
		}
	}
	var records []networkregistry.Record
	fieldManager := o.fieldManager
	if lengthSet {
		record.PrefixLength = o.prefixLength
		if record.Name == "" {
			// The name tells the record apart; the claim it is taken
			// from says best what it is, and a DNS subdomain without
			// dots is a DNS label.
			record.Name = strings.ReplaceAll(o.from, ".", "-")
		}
		records = []networkregistry.Record{record}
		fieldManager = cmp.Or(fieldManager, claimFieldManager+"-"+record.Name)
	} else {
		for _, arg := range prefixArgs {
			p, err := parsePrefixArg("PREFIX", arg, "10.96.0.0/12")
			if err != nil {
				return nil, "", err
			}
			r := record
			r.Prefix = p
			records = append(records, r)
		}
		fieldManager = cmp.Or(fieldManager, claimFieldManager)
	}
	if errs := networkregistry.ValidateClaim(name, records); len(errs) > 0 {
		return nil, "", o.argumentError(args, flags, errs)
	}
	return records, fieldManager, nil
}

// policy reads the pool policy flags; nil when none is given. What the API
// checks (lengths that fit the record, reservations inside it) is left to
// its validation; what the flags alone say is checked here.
func (o *claimOptions) policy(args []string, flags *pflag.FlagSet) (*networkregistry.PoolPolicy, error) {
	given := slices.IndexFunc(policyFlags, flags.Changed)
	if given < 0 {
		return nil, nil
	}
	if !o.delegable {
		flag := policyFlags[given]
		value := flags.Lookup(flag).Value.String()
		if flag == "reserve" {
			value = o.reserve[0]
		}
		what := strings.Join(args, " ")
		if len(args) == 1 {
			what += " --from " + cmp.Or(o.from, "org") + " --prefix-length " + strconv.Itoa(cmp.Or(o.prefixLength, 16))
		}
		return nil, fmt.Errorf("--%s sets how a delegable record hands out its space: add --delegable, e.g. claim %s --delegable --%s %s", flag, what, flag, value)
	}
	// Zero would leave the field unset, not refused: say what to write.
	for _, unset := range []struct {
		flag  string
		value int
		hint  string
	}{
		{"min-prefix-length", o.minPrefixLength, "the length of the largest sub-prefix to hand out, e.g. 16"},
		{"max-prefix-length", o.maxPrefixLength, "the length of the smallest sub-prefix to hand out, e.g. 24"},
		{"max-records-per-claim", o.maxRecordsPerClaim, "1 to 64"},
	} {
		if flags.Changed(unset.flag) && unset.value == 0 {
			return nil, fmt.Errorf("--%s 0: write %s, or leave the flag out for no limit", unset.flag, unset.hint)
		}
	}
	switch d := o.reuseGracePeriod; {
	case d < 0:
		return nil, fmt.Errorf("--reuse-grace-period %s: must not be negative: write e.g. 1h, or 0 to reuse a released sub-prefix at once", d)
	case d > validation.MaxReuseGracePeriodSeconds*time.Second:
		return nil, fmt.Errorf("--reuse-grace-period %s: must be at most 720h (30 days): write e.g. 24h", d)
	case d%time.Second != 0:
		return nil, fmt.Errorf("--reuse-grace-period %s: must be whole seconds, as the API counts it: write e.g. %s", d, d.Round(time.Second))
	}
	policy := &networkregistry.PoolPolicy{
		MinPrefixLength: o.minPrefixLength, MaxPrefixLength: o.maxPrefixLength, MaxRecordsPerClaim: o.maxRecordsPerClaim,
		ReuseGracePeriod: o.reuseGracePeriod,
	}
	for _, arg := range o.reserve {
		prefix, description, _ := strings.Cut(arg, "=")
		p, err := parsePrefixArg("--reserve", prefix, "10.255.0.0/16")
		if err != nil {
			return nil, err
		}
		policy.Reservations = append(policy.Reservations, networkregistry.Reservation{Prefix: p, Description: description})
	}
	return policy, nil
}

// recordFlags are the flags that set the fields of a record, by the field's
// path in the record.
var recordFlags = map[string]string{
	"name":                         "name",
	"prefixLength":                 "prefix-length",
	"from.claim":                   "from",
	"from.prefix":                  "from-prefix",
	"description":                  "description",
	"reference.group":              "reference",
	"reference.resource":           "reference",
	"pool.minPrefixLength":         "min-prefix-length",
	"pool.maxPrefixLength":         "max-prefix-length",
	"pool.maxRecordsPerClaim":      "max-records-per-claim",
	"pool.reuseGracePeriodSeconds": "reuse-grace-period",
	"pool.reservations":            "reserve",
}

// reservationField is the path of a field of a reservation, in a record.
var reservationField = regexp.MustCompile(`^pool\.reservations\[(\d+)\]\.`)

// recordField is the path of a field of the claim's records: index and
// field.
var recordField = regexp.MustCompile(`^spec\.addressSpace\[(\d+)\]\.(.+)$`)

// argumentError says what the API's validation refused in the arguments,
// the first error of errs, in the command's terms: the argument or flag
// that set the field, as the user wrote it, and the validation's message,
// which says what to write instead.
func (o *claimOptions) argumentError(args []string, flags *pflag.FlagSet, errs field.ErrorList) error {
	// A record name made from --from is not the user's: what is wrong
	// with --from itself is told first.
	derivedName := flags.Changed("prefix-length") && o.name == ""
	e := errs[0]
	if i := slices.IndexFunc(errs, func(e *field.Error) bool { return !strings.HasSuffix(e.Field, "].name") }); derivedName && i >= 0 {
		e = errs[i]
	}
	var what, value, hint string
	m := recordField.FindStringSubmatch(e.Field)
	switch {
	case e.Field == "metadata.name":
		// The generic name validation gives no example.
		what, value, hint = "NAME", args[0], "; write a NetworkClaim name such as cluster-a"
	case e.Field == "spec.addressSpace":
		what = "PREFIX"
	case m == nil:
		return e
	case m[2] == "prefix":
		i, _ := strconv.Atoi(m[1])
		if 1+i >= len(args) {
			return e
		}
		what, value = "PREFIX", args[1+i]
	case m[2] == "name" && derivedName:
		return fmt.Errorf("--from %s makes no record name: give --name, e.g. --name pods-v4", o.from)
	case reservationField.MatchString(m[2]):
		r := reservationField.FindStringSubmatch(m[2])
		i, _ := strconv.Atoi(r[1])
		if i >= len(o.reserve) {
			return e
		}
		what, value = "--reserve", o.reserve[i]
	case recordFlags[m[2]] != "":
		flag := recordFlags[m[2]]
		what, value = "--"+flag, flags.Lookup(flag).Value.String()
	default:
		return e
	}
	// The policy flags apply to every PREFIX: say which one refused them.
	var forPrefix string
	if m != nil && strings.HasPrefix(m[2], "pool.") && len(args) > 2 {
		if i, _ := strconv.Atoi(m[1]); 1+i < len(args) {
			forPrefix = " (for PREFIX " + args[1+i] + ")"
		}
	}
	if e.Type != field.ErrorTypeInvalid {
		return fmt.Errorf("%s%s: %s", what, forPrefix, e.ErrorBody())
	}
	// As the API's own messages: strings quoted, numbers not.
	if _, ok := e.BadValue.(string); ok {
		value = strconv.Quote(value)
	}
	return fmt.Errorf("%s %s%s: %s%s", what, value, forPrefix, e.Detail, hint)
}

// parsePrefixArg reads a prefix given by the user as what; whether it is
// one the API admits is validation's to say.
func parsePrefixArg(what, s, example string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%s %q: write an IPv4 or IPv6 prefix such as %s", what, s, example)
	}
	return p, nil
}

// parseReference reads --reference: RESOURCE or RESOURCE.GROUP, as kubectl
// names resources (servicecidrs.networking.k8s.io); "" is none.
func parseReference(s string) *v1alpha1.ResourceReference {
	if s == "" {
		return nil
	}
	resource, group, _ := strings.Cut(s, ".")
	return &v1alpha1.ResourceReference{Group: group, Resource: resource}
}

// run applies the records and waits for the registry's decision.
func (o *claimOptions) run(ctx context.Context, out io.Writer, name string, records []networkregistry.Record, fieldManager string) error {
	config, client, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRegistryTimeout)
	defer cancel()
	r := networkregistry.New(client, fieldManager)
	applied, err := r.Claim(ctx, name, records)
	if err != nil {
		if errors.Is(context.Cause(ctx), errRegistryTimeout) {
			return fmt.Errorf("NetworkClaim %s was not applied within --timeout=%s: raise --timeout or check the server %s", name, o.timeout, config.Host)
		}
		return o.explainForbidden(err)
	}
	// The one claim is watched, not the whole registry, which may hold
	// 100,000.
	claim, err := r.WaitForDecision(ctx, applied)
	if errors.Is(context.Cause(ctx), errRegistryTimeout) {
		return fmt.Errorf("NetworkClaim %s is applied, but the registry did not decide on it within --timeout=%s: raise --timeout, or look later with registry list", name, o.timeout)
	}
	var unavailable *networkregistry.UnavailableError
	if err != nil && !errors.As(err, &unavailable) {
		return err
	}
	if err := printClaim(out, o.output, claim); err != nil {
		return err
	}
	// Ready True says every record is allocated; counting them too keeps
	// a registry that decided without a record from passing for success.
	decisions := networkregistry.Decisions(claim)
	if n := countNotAllocated(decisions); n > 0 {
		return fmt.Errorf("NetworkClaim %s: %d of %d records unavailable; the claim stays, and %s (registry release %s withdraws it)",
			name, n, len(decisions), waitingFor(decisions), name)
	}
	return nil
}

// explainForbidden says, of a refused claim, what the user may ask the
// registry's admin for: the verb use on the --from claim when the
// NetworkClaimPoolUse admission plugin refused a record's from (its
// FieldValueForbidden cause on from.claim), or the right to write claims.
func (o *claimOptions) explainForbidden(err error) error {
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return err
	}
	if details := status.Status().Details; details != nil && slices.ContainsFunc(details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeForbidden && strings.HasSuffix(c.Field, ".from.claim")
	}) {
		pool := cmp.Or(o.from, "CLAIM")
		return fmt.Errorf("%w; ask the registry's admin for the verb use on NetworkClaim %s (a ClusterRole with the rule {apiGroups: [networking.x-k8s.io], resources: [networkclaims], resourceNames: [%s], verbs: [use]}, bound to you), or take from a claim you may use", err, pool, pool)
	}
	return fmt.Errorf("%w; ask the registry's admin for create and patch on networkclaims (the edit ClusterRole has them)", err)
}

func countNotAllocated(decisions []networkregistry.Decision) int {
	n := 0
	for _, d := range decisions {
		if _, ok := d.Allocated(); !ok {
			n++
		}
	}
	return n
}

// waitingFor says what the unavailable records wait for: space, most
// often, but a record refused by its pool's policy waits for a change, and
// one resting in a grace period for time.
func waitingFor(decisions []networkregistry.Decision) string {
	var space, policy, grace bool
	for _, d := range decisions {
		if _, ok := d.Allocated(); ok {
			continue
		}
		var reason string
		if d.Status != nil {
			reason = d.Status.Reason
		}
		switch reason {
		case v1alpha1.ReasonPoolPolicy:
			policy = true
		case v1alpha1.ReasonReuseGracePeriod:
			grace = true
		default:
			space = true
		}
	}
	var clauses []string
	if space {
		clauses = append(clauses, "the registry allocates them when the space they wait for is free")
	}
	if grace {
		clauses = append(clauses, "a record waiting for a released prefix to rest (ReuseGracePeriod) gets it when the pool's reuse grace period ends")
	}
	if policy {
		clauses = append(clauses, "a record refused by its pool's policy (PoolPolicy) waits until it fits the policy, which registry pools shows")
	}
	return strings.Join(clauses, "; ")
}

// printClaim writes the claim as JSON or YAML, or else its records as
// claim's table.
func printClaim(w io.Writer, format string, claim *v1alpha1.NetworkClaim) error {
	if format != "" {
		claim = claim.DeepCopy()
		// Typed clients leave the kind out; a manifest has it. The
		// managed fields are noise here, as kubectl hides them.
		claim.APIVersion, claim.Kind = v1alpha1.SchemeGroupVersion.String(), "NetworkClaim"
		claim.ManagedFields = nil
		return printObject(w, format, claim)
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "RECORD\tPREFIX\tSTATUS\tREASON\tDETAILS")
	for _, d := range networkregistry.Decisions(claim) {
		r := decisionRecord(claim.Name, d)
		details := r.Message
		if r.Status == string(v1alpha1.AllocationAllocated) {
			var parts []string
			if from := r.DelegatedFrom; from != nil {
				parts = append(parts, fmt.Sprintf("from %s %s", from.Claim, from.Prefix))
			}
			if r.Description != "" {
				parts = append(parts, r.Description)
			}
			if p, err := netip.ParsePrefix(r.Prefix); err == nil && r.Delegable {
				if policy := policyString(d.Record.Pool, p); policy != "" {
					parts = append(parts, "policy "+policy)
				}
			}
			details = strings.Join(parts, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", orDash(r.Name), orDash(r.Prefix), r.Status, orDash(r.Reason), details)
	}
	return tw.Flush()
}
