package registrycli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

const (
	// claimFieldManager is the default field manager of the records that
	// registry claim applies with PREFIX arguments.
	claimFieldManager = "registry-claim"
	// maxDescription is the API's limit on a record's description.
	maxDescription = 255
)

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
}

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

It applies the records by server-side apply with field manager --field-manager: they replace
the records that an earlier run with the same field manager applied to NAME, and records
applied by others stay. The default field manager is "registry-claim" for PREFIX arguments,
and "registry-claim-RECORD" for a record taken from a pool, so that each such record (each
--name) is claimed, and changed, on its own.

It prints one row per record of the claim: its name, its prefix (for a record taken from a
pool, the one the registry chose), and the decision: Allocated, or Unavailable with the reason
(Conflict, PoolExhausted, PoolNotFound) and why. -o json or -o yaml prints the NetworkClaim
instead, status included.

It exits 0 when every record of the claim is allocated. It exits 1, after printing, when some
record is Unavailable: the claim stays, and the registry allocates the record when the space
it waits for is free (registry release NAME withdraws it); and it exits 1 when the registry has
not decided within --timeout, as kubectl wait does.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("claim takes the NetworkClaim's name first, e.g. claim cluster-a 10.96.0.0/12 or claim cluster-a --from org-pods --prefix-length 16")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			records, fieldManager, err := o.records(args, cmd.Flags().Changed)
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
			fss.FlagSet("claim").StringVar(&o.fieldManager, "field-manager", "", `The field manager to apply the records with. Defaults to "registry-claim", or "registry-claim-RECORD" for a record taken with --prefix-length.`)
		},
	})
	return cmd
}

// records checks the arguments and flags, before anything connects, and
// returns the records to apply and the field manager to apply them with.
// changed tells which flags were given.
func (o *claimOptions) records(args []string, changed func(flag string) bool) ([]networkregistry.Record, string, error) {
	if err := o.validate(); err != nil {
		return nil, "", err
	}
	lengthSet := changed("prefix-length")
	name, prefixArgs := args[0], args[1:]
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return nil, "", fmt.Errorf("NAME %q: %s; write a NetworkClaim name such as cluster-a", name, strings.Join(msgs, "; "))
	}
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
	case o.from == name:
		return nil, "", fmt.Errorf("--from %s names the claim itself: take from another claim's delegable prefix, or leave --from out to claim the prefixes in their own right", o.from)
	case changed("field-manager") && o.fieldManager == "":
		return nil, "", errors.New("--field-manager must not be empty; leave it out for the default")
	case len(o.description) > maxDescription:
		return nil, "", fmt.Errorf("--description is %d characters long; write at most %d", len(o.description), maxDescription)
	}
	if o.from != "" {
		if msgs := validation.IsDNS1123Subdomain(o.from); len(msgs) > 0 {
			return nil, "", fmt.Errorf("--from %q: %s; write a NetworkClaim name such as org-pods", o.from, strings.Join(msgs, "; "))
		}
	}
	var from *networkregistry.PrefixSource
	if o.from != "" {
		from = &networkregistry.PrefixSource{Claim: o.from}
		if o.fromPrefix != "" {
			p, err := parsePrefixArg("--from-prefix", o.fromPrefix, "10.0.0.0/8")
			if err != nil {
				return nil, "", err
			}
			from.Prefix = p
		}
	}
	ref, err := parseReference(o.reference)
	if err != nil {
		return nil, "", err
	}
	record := networkregistry.Record{From: from, Delegable: o.delegable, Reference: ref, Description: o.description, Name: o.name}
	if lengthSet {
		if err := o.checkPrefixLength(from); err != nil {
			return nil, "", err
		}
		record.PrefixLength = o.prefixLength
		if record.Name == "" {
			// The name tells the record apart; the claim it is taken
			// from says best what it is, and a DNS subdomain without
			// dots is a DNS label.
			record.Name = strings.ReplaceAll(o.from, ".", "-")
			if len(validation.IsDNS1123Label(record.Name)) > 0 {
				return nil, "", fmt.Errorf("--from %s makes no record name: give --name, e.g. --name pods-v4", o.from)
			}
		} else if msgs := validation.IsDNS1123Label(record.Name); len(msgs) > 0 {
			return nil, "", fmt.Errorf("--name %q: %s; write a short name such as pods-v4", record.Name, strings.Join(msgs, "; "))
		}
		fieldManager := o.fieldManager
		if fieldManager == "" {
			fieldManager = claimFieldManager + "-" + record.Name
		}
		return []networkregistry.Record{record}, fieldManager, nil
	}
	if o.name != "" {
		if msgs := validation.IsDNS1123Label(o.name); len(msgs) > 0 {
			return nil, "", fmt.Errorf("--name %q: %s; write a short name such as pods-v4", o.name, strings.Join(msgs, "; "))
		}
	}
	records := make([]networkregistry.Record, 0, len(prefixArgs))
	for _, arg := range prefixArgs {
		p, err := parsePrefixArg("PREFIX", arg, "10.96.0.0/12")
		if err != nil {
			return nil, "", err
		}
		if from != nil && from.Prefix.IsValid() && (p.Bits() <= from.Prefix.Bits() || !from.Prefix.Contains(p.Addr())) {
			return nil, "", fmt.Errorf("PREFIX %s is not inside --from-prefix %s: claim a sub-prefix of it, or leave --from-prefix out", p, from.Prefix)
		}
		for _, other := range records {
			if p.Overlaps(other.Prefix) {
				return nil, "", fmt.Errorf("PREFIX %s overlaps PREFIX %s: the records of one claim must not overlap; claim the larger prefix alone", p, other.Prefix)
			}
		}
		r := record
		r.Prefix = p
		records = append(records, r)
	}
	fieldManager := o.fieldManager
	if fieldManager == "" {
		fieldManager = claimFieldManager
	}
	return records, fieldManager, nil
}

// checkPrefixLength checks --prefix-length against the pool it is taken
// from, when --from-prefix names it, else against the longest family.
func (o *claimOptions) checkPrefixLength(from *networkregistry.PrefixSource) error {
	n := o.prefixLength
	if from.Prefix.IsValid() {
		if lo, hi := from.Prefix.Bits()+1, from.Prefix.Addr().BitLen(); n < lo || n > hi {
			return fmt.Errorf("--prefix-length %d does not fit strictly inside --from-prefix %s: write %d to %d", n, from.Prefix, lo, hi)
		}
		return nil
	}
	if n < 1 || n > 128 {
		return fmt.Errorf("--prefix-length %d: write 1 to 32 for an IPv4 pool, 1 to 128 for an IPv6 one, e.g. --prefix-length 16", n)
	}
	return nil
}

// parsePrefixArg reads a prefix given by the user as what, and insists on
// its canonical form, as the API does.
func parsePrefixArg(what, s, example string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%s %q: write an IPv4 or IPv6 prefix such as %s", what, s, example)
	}
	if masked := p.Masked(); masked != p {
		return netip.Prefix{}, fmt.Errorf("%s %s has host bits set: write %s", what, s, masked)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("%s %s is an IPv4-mapped IPv6 prefix: write the IPv4 prefix", what, s)
	}
	return p, nil
}

// parseReference reads --reference: RESOURCE or RESOURCE.GROUP, as kubectl
// names resources (servicecidrs.networking.k8s.io); "" is none.
func parseReference(s string) (*v1alpha1.ResourceReference, error) {
	if s == "" {
		return nil, nil
	}
	resource, group, _ := strings.Cut(s, ".")
	msgs := validation.IsDNS1123Label(resource)
	if group != "" {
		msgs = append(msgs, validation.IsDNS1123Subdomain(group)...)
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("--reference %q: %s; write a plural resource name, with its group unless it is the core group, e.g. pods, services or servicecidrs.networking.k8s.io", s, strings.Join(msgs, "; "))
	}
	return &v1alpha1.ResourceReference{Group: group, Resource: resource}, nil
}

// run applies the records and waits for the registry's decision.
func (o *claimOptions) run(ctx context.Context, out io.Writer, name string, records []networkregistry.Record, fieldManager string) error {
	config, client, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRegistryTimeout)
	defer cancel()
	applied, err := networkregistry.New(client, fieldManager).Claim(ctx, name, records)
	if err != nil {
		if errors.Is(context.Cause(ctx), errRegistryTimeout) {
			return fmt.Errorf("NetworkClaim %s was not applied within --timeout=%s: raise --timeout or check the server %s", name, o.timeout, config.Host)
		}
		return err
	}
	claim, err := waitForDecision(ctx, client, applied)
	if errors.Is(context.Cause(ctx), errRegistryTimeout) {
		return fmt.Errorf("NetworkClaim %s is applied, but the registry did not decide on it within --timeout=%s: raise --timeout, or look later with registry list", name, o.timeout)
	}
	if err != nil {
		return err
	}
	if err := printClaim(out, o.output, claim); err != nil {
		return err
	}
	// Ready True says every record is allocated; counting them too keeps
	// a registry that decided without a record from passing for success.
	decisions := networkregistry.Decisions(claim)
	if n := countNotAllocated(decisions); n > 0 {
		return fmt.Errorf("NetworkClaim %s: %d of %d records unavailable; the claim stays, and the registry allocates them when the space they wait for is free (registry release %s withdraws it)",
			name, n, len(decisions), name)
	}
	return nil
}

// waitForDecision watches the one claim applied (not the whole registry,
// which may hold 100,000) until the registry has decided on the generation
// written, and returns it.
func waitForDecision(ctx context.Context, client versioned.Interface, applied *v1alpha1.NetworkClaim) (*v1alpha1.NetworkClaim, error) {
	claims := client.NetworkingV1alpha1().NetworkClaims()
	selector := fields.OneTermEqualSelector("metadata.name", applied.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return claims.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return claims.Watch(ctx, o)
		},
	}
	var decided *v1alpha1.NetworkClaim
	_, err := watchtools.UntilWithSync(ctx, lw, &v1alpha1.NetworkClaim{}, func(store cache.Store) (bool, error) {
		if _, ok, _ := store.GetByKey(applied.Name); !ok {
			return false, fmt.Errorf("NetworkClaim %s was deleted while waiting for its allocation", applied.Name)
		}
		return false, nil
	}, func(e watch.Event) (bool, error) {
		c, ok := e.Object.(*v1alpha1.NetworkClaim)
		switch {
		case !ok:
			return false, nil
		case e.Type == watch.Deleted || c.UID != applied.UID:
			return false, fmt.Errorf("NetworkClaim %s was deleted while waiting for its allocation", applied.Name)
		case c.Generation < applied.Generation || !networkregistry.Decided(c):
			return false, nil
		}
		decided = c
		return true, nil
	})
	return decided, err
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
			details = strings.Join(parts, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", orDash(r.Name), orDash(r.Prefix), r.Status, orDash(r.Reason), details)
	}
	return tw.Flush()
}
