// Package registrycli is the registry command of sample-generic-controlplane:
// it claims, releases and looks up address space in the NetworkClaim
// registry of a running control plane, through client/networkregistry.
package registrycli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/clientconfig"
)

// statusPending is shown for a claimed prefix the registry has not decided on.
const statusPending = "Pending"

// NewCommand returns the registry command: it claims and releases address
// space in the NetworkClaim registry of a running control plane, and looks
// up who holds which.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Claim IP address space in the NetworkClaim registry, and look up who holds which",
		Long: `Claims, releases and looks up address space in the NetworkClaim registry of a control plane:
the IP prefixes that components claimed, or took from other claims' delegable prefixes, and
what the registry decided on each (Allocated; Unavailable because another claim holds an
overlapping prefix or the pool has no room; or Pending). It finds the control plane as kubectl
does: in --kubeconfig, else in $KUBECONFIG, else in ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRegistryListCommand(), newRegistryWhoisCommand(), newRegistryPoolsCommand(), newRegistryClaimCommand(), newRegistryReleaseCommand(), newRegistryUICommand())
	// The root's help lists its flags, which are not this command's.
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n\nUsage:\n  %s <command> [--kubeconfig=FILE] [flags]\n\nCommands:\n", cmd.Long, cmd.CommandPath())
		for _, sub := range cmd.Commands() {
			fmt.Fprintf(cmd.OutOrStdout(), "  %-7s %s\n", sub.Name(), sub.Short)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "\nRun '%s <command> --help' for a command's flags.\n", cmd.CommandPath())
	})
	return cmd
}

// registryOptions are the flags of the registry subcommands.
type registryOptions struct {
	kubeconfig string
	output     string
	timeout    time.Duration
}

// registryFlags says which of the common flags a subcommand has, and adds
// its own.
type registryFlags struct {
	// timeout is the usage of --timeout: what the command waits for.
	timeout string
	// noTimeout leaves --timeout out, for a command that runs until
	// stopped.
	noTimeout bool
	// output is whether the command has -o.
	output bool
	// own adds the command's own flag sets.
	own func(fss *cliflag.NamedFlagSets)
}

func (o *registryOptions) addFlags(cmd *cobra.Command, flags registryFlags) {
	var fss cliflag.NamedFlagSets
	if flags.own != nil {
		flags.own(&fss)
	}
	connection := fss.FlagSet("connection")
	connection.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Kubeconfig of the control plane to look up. Defaults, as for kubectl, to $KUBECONFIG, then ~/.kube/config.")
	// The binary's root command reads the file before this command runs
	// (as for its other subcommands): here it only needs a name.
	connection.String("config", "", "Config file of the control plane (as its --config): without --kubeconfig, use admin.kubeconfig in the file's data-dir.")
	timeout := flags.timeout
	if timeout == "" {
		timeout = "How long to wait for the control plane's NetworkClaims before giving up."
	}
	if !flags.noTimeout {
		connection.DurationVar(&o.timeout, "timeout", 30*time.Second, timeout)
	}
	if flags.output {
		fss.FlagSet("output").StringVarP(&o.output, "output", "o", o.output, "Output format: json or yaml, or leave it out for a table.")
	}
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
}

// validate checks the flags before anything connects.
func (o *registryOptions) validate() error {
	switch o.output {
	case "", outputJSON, outputYAML:
	default:
		return fmt.Errorf("-o: unknown output format %q; write -o json, -o yaml, or leave it out for a table", o.output)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive; write e.g. --timeout=30s")
	}
	return nil
}

const (
	outputJSON = "json"
	outputYAML = "yaml"
)

// errRegistryTimeout ends the requests of a registry subcommand when
// --timeout has passed.
var errRegistryTimeout = errors.New("--timeout passed")

// restConfig loads --kubeconfig (RESTConfig).
func (o *registryOptions) restConfig() (*rest.Config, error) {
	return clientconfig.Load(o.kubeconfig)
}

// client is a client of the control plane the kubeconfig names, and that
// configuration (for messages that name the server).
func (o *registryOptions) client() (*rest.Config, versioned.Interface, error) {
	config, err := o.restConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return config, client, nil
}

// start returns a registry that has read every NetworkClaim, once: the
// commands ask and exit, so they list rather than watch, and a refused
// connection or a refusal of the server fails at once.
func (o *registryOptions) start(ctx context.Context) (*networkregistry.Registry, error) {
	config, client, err := o.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRegistryTimeout)
	defer cancel()
	return o.snapshot(ctx, config, client)
}

// snapshot reads every NetworkClaim once; ctx ends with errRegistryTimeout
// when --timeout passes.
func (o *registryOptions) snapshot(ctx context.Context, config *rest.Config, client versioned.Interface) (*networkregistry.Registry, error) {
	r, err := networkregistry.Snapshot(ctx, client)
	if err != nil && errors.Is(context.Cause(ctx), errRegistryTimeout) {
		return nil, fmt.Errorf("the NetworkClaims of %s were not read within --timeout=%s; raise --timeout or check the server", config.Host, o.timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the NetworkClaims of %s: %w", config.Host, err)
	}
	return r, nil
}

func newRegistryListCommand() *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "list [--kubeconfig=FILE]",
		Short: "List every claimed prefix of every NetworkClaim and the registry's decision on it",
		Long: `Lists every prefix claimed by every NetworkClaim, by claim, with the registry's decision:
Allocated, Unavailable (DETAILS says why: it names the claim that holds an overlapping prefix,
or the pool without room) or Pending (not decided yet). A record taken from a pool shows the
prefix the registry chose, "-" while it has none. SINCE is how long ago the registry decided
("-" while Pending). -o json and -o yaml print the same records as an array, with the date of
each decision, the record's name, and where it was delegated from.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			r, err := o.start(cmd.Context())
			if err != nil {
				return err
			}
			records := recordsOfClaims(r.Claims())
			if o.output != "" {
				return printObject(cmd.OutOrStdout(), o.output, records)
			}
			if len(records) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No NetworkClaims found")
				return nil
			}
			return printList(cmd.OutOrStdout(), records, time.Now())
		},
	}
	o.addFlags(cmd, registryFlags{output: true})
	return cmd
}

func newRegistryWhoisCommand() *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "whois <ip|prefix> [--kubeconfig=FILE]",
		Short: "Show the allocations that contain an IP address or overlap a prefix",
		Long: `Shows who holds an address: the allocated prefixes that contain an IP address (10.96.0.1,
fd00::1), or that overlap a prefix (10.96.0.0/12), with the NetworkClaim that holds each and
what for (REFERENCE, DESCRIPTION). CHAIN is the delegation chain of the prefix: its claim,
then the claim whose delegable prefix it was taken from, and so on, e.g.
"cluster-b ← org-pods"; "(released)" marks a delegating prefix that is no longer allocated.
When no claim holds the address, it says so on stderr and exits 0. -o json and -o yaml print
an array, with each chain as {claim, prefix} steps.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("whois takes one IP address or prefix, e.g. whois 10.96.0.1 or whois 10.96.0.0/12; got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if _, err := networkregistry.ParseAddrOrPrefix(args[0]); err != nil {
				return err
			}
			r, err := o.start(cmd.Context())
			if err != nil {
				return err
			}
			allocations, err := r.WhoHas(args[0])
			if err != nil {
				return err
			}
			records := recordsOfAllocations(allocations, r.Chain)
			if o.output != "" {
				return printObject(cmd.OutOrStdout(), o.output, records)
			}
			if len(records) == 0 {
				// kubectl's "No resources found": not an error.
				fmt.Fprintf(cmd.ErrOrStderr(), "No NetworkClaim holds %s\n", args[0])
				return nil
			}
			return printWhois(cmd.OutOrStdout(), records)
		},
	}
	o.addFlags(cmd, registryFlags{output: true})
	return cmd
}

// registryRecord is one claimed record: a row of list and whois, and an
// element of their JSON and YAML output.
type registryRecord struct {
	Claim string `json:"claim"`
	// Name is the record's name, if it has one.
	Name string `json:"name,omitempty"`
	// Prefix is the record's prefix, or the one the registry chose for a
	// record taken from a pool; empty while it has none.
	Prefix string `json:"prefix,omitempty"`
	// Status is Allocated, Unavailable or Pending.
	Status      string                      `json:"status"`
	Reference   *v1alpha1.ResourceReference `json:"reference,omitempty"`
	Description string                      `json:"description,omitempty"`
	Delegable   bool                        `json:"delegable,omitempty"`
	// From is what the record asks to be taken from.
	From *v1alpha1.PrefixSource `json:"from,omitempty"`
	// PrefixLength is the length a record taken from a pool asks for.
	PrefixLength *int32 `json:"prefixLength,omitempty"`
	// Date is when the registry decided; nil while pending.
	Date    *metav1.Time `json:"date,omitempty"`
	Reason  string       `json:"reason,omitempty"`
	Message string       `json:"message,omitempty"`
	// ConflictsWith is the allocation an Unavailable record overlaps.
	ConflictsWith *v1alpha1.ClaimedPrefix `json:"conflictsWith,omitempty"`
	// DelegatedFrom is the allocation an allocated record was taken from.
	DelegatedFrom *v1alpha1.ClaimedPrefix `json:"delegatedFrom,omitempty"`
	// Chain is, for whois, the delegation chain: the record itself first,
	// then each allocation it was delegated from.
	Chain []chainStep `json:"chain,omitempty"`
}

// chainStep is one allocation of a delegation chain.
type chainStep struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix"`
	// Released marks the last step when the allocation it names is gone:
	// the prefix above it keeps its allocation.
	Released bool `json:"released,omitempty"`
}

// recordsOfClaims returns every spec record of the claims with the
// registry's decision on it, by claim name, then in prefix order (IPv4
// first, then CIDR order; records without a prefix yet first).
func recordsOfClaims(claims []*v1alpha1.NetworkClaim) []registryRecord {
	var out []registryRecord
	for _, c := range claims {
		decisions := networkregistry.Decisions(c)
		records := make([]prefixRecord, 0, len(decisions))
		for _, d := range decisions {
			records = append(records, prefixRecord{decisionRecord(c.Name, d)})
		}
		slices.SortStableFunc(records, func(a, b prefixRecord) int { return a.prefix().Compare(b.prefix()) })
		for _, r := range records {
			out = append(out, r.registryRecord)
		}
	}
	return out
}

// decisionRecord is the row of one record of the claim and the registry's
// decision on it.
func decisionRecord(claim string, d networkregistry.Decision) registryRecord {
	spec := d.Record
	r := registryRecord{
		Claim: claim, Name: spec.Name, Prefix: spec.Prefix, Status: statusPending,
		Reference: spec.Reference, Description: spec.Description, Delegable: spec.Delegable,
		From: spec.From, PrefixLength: spec.PrefixLength,
	}
	if s := d.Status; s != nil {
		date := s.Date
		r.Status, r.Date, r.Reason, r.Message = string(s.Status), &date, s.Reason, s.Message
		r.ConflictsWith, r.DelegatedFrom = s.ConflictsWith, s.DelegatedFrom
		if s.Prefix != "" {
			r.Prefix = s.Prefix
		}
	}
	return r
}

// prefixRecord sorts records by prefix.
type prefixRecord struct{ registryRecord }

// prefix is the record's prefix; validation admits only canonical ones,
// and were one not, or is there none yet, the zero prefix sorts it first.
func (r prefixRecord) prefix() netip.Prefix {
	p, _ := netip.ParsePrefix(r.Prefix)
	return p
}

// recordsOfAllocations keeps the registry's order: by prefix, then claim.
// chain gives each allocation's delegation chain (Registry.Chain).
func recordsOfAllocations(allocations []networkregistry.Allocation, chain func(networkregistry.Allocation) []networkregistry.Allocation) []registryRecord {
	out := make([]registryRecord, 0, len(allocations))
	for _, a := range allocations {
		date := metav1.NewTime(a.Date)
		r := registryRecord{
			Claim: a.Claim, Name: a.Name, Prefix: a.Prefix.String(), Status: string(v1alpha1.AllocationAllocated),
			Reference: a.Reference, Description: a.Description, Delegable: a.Delegable, Date: &date,
		}
		if from := a.DelegatedFrom; from != nil {
			r.DelegatedFrom = &v1alpha1.ClaimedPrefix{Claim: from.Claim, Prefix: from.Prefix.String()}
		}
		steps := chain(a)
		for _, step := range steps {
			r.Chain = append(r.Chain, chainStep{Claim: step.Claim, Prefix: step.Prefix.String()})
		}
		// The chain ends early where a delegating allocation is gone.
		if len(steps) > 0 {
			if gone := steps[len(steps)-1].DelegatedFrom; gone != nil {
				r.Chain = append(r.Chain, chainStep{Claim: gone.Claim, Prefix: gone.Prefix.String(), Released: true})
			}
		}
		out = append(out, r)
	}
	return out
}

// printList writes the records as list's table. SINCE is how long before
// now the registry decided on the record, "-" while it is pending (not the
// claim's age: a record may be decided long after its claim was made).
// DETAILS is why a prefix is unavailable, else what it is for.
func printList(w io.Writer, records []registryRecord, now time.Time) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "CLAIM\tPREFIX\tSTATUS\tREFERENCE\tSINCE\tDETAILS")
	for _, r := range records {
		since := "-"
		if r.Date != nil {
			since = duration.HumanDuration(now.Sub(r.Date.Time))
		}
		details := r.Description
		if r.Message != "" {
			details = r.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Claim, orDash(r.Prefix), r.Status, referenceString(r.Reference), since, details)
	}
	return tw.Flush()
}

// printWhois writes the allocations as whois's table.
func printWhois(w io.Writer, records []registryRecord) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "PREFIX\tCLAIM\tREFERENCE\tALLOCATED\tCHAIN\tDESCRIPTION")
	for _, r := range records {
		allocated := "-"
		if r.Date != nil {
			allocated = r.Date.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Prefix, r.Claim, referenceString(r.Reference), allocated, chainString(r), r.Description)
	}
	return tw.Flush()
}

// chainString writes a delegation chain as claim names, the record's own
// first, e.g. "node-1 ← cluster-a ← org-pods".
func chainString(r registryRecord) string {
	if len(r.Chain) == 0 {
		return r.Claim
	}
	names := make([]string, 0, len(r.Chain))
	for _, step := range r.Chain {
		name := step.Claim
		if step.Released {
			name += " (released)"
		}
		names = append(names, name)
	}
	return strings.Join(names, " ← ")
}

// printJSON writes the records as a JSON array; [] when there are none.
func printJSON(w io.Writer, records []registryRecord) error {
	return printObject(w, outputJSON, records)
}

// printObject writes v as indented JSON or as YAML. A nil slice is written
// as an empty array, not null.
func printObject(w io.Writer, format string, v any) error {
	if records, ok := v.([]registryRecord); ok && records == nil {
		v = []registryRecord{}
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == outputYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// orDash writes "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// newTabWriter aligns columns as kubectl's tables do.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
}

// referenceString writes a reference as the server's table does (kubectl
// get networkclaims -o wide): "resource.group", "services" for the core
// group, and "<none>" for none.
func referenceString(ref *v1alpha1.ResourceReference) string {
	if ref == nil {
		return "<none>"
	}
	return schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String()
}
