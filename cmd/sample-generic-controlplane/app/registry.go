package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// statusPending is shown for a claimed prefix the registry has not decided on.
const statusPending = "Pending"

// newRegistryCommand looks up the NetworkClaim registry of a running control
// plane: who holds which address space.
func newRegistryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Look up who holds which IP address space in the NetworkClaim registry",
		Long: `Looks up the NetworkClaim registry of a control plane: the IP prefixes that components
claimed, and what the registry decided on each (Allocated, Unavailable because another claim
holds an overlapping prefix, or Pending). It finds the control plane as kubectl does: in
--kubeconfig, else in $KUBECONFIG, else in ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRegistryListCommand(), newRegistryWhoisCommand())
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

func (o *registryOptions) addFlags(cmd *cobra.Command) {
	var fss cliflag.NamedFlagSets
	connection := fss.FlagSet("connection")
	connection.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Kubeconfig of the control plane to look up. Defaults, as for kubectl, to $KUBECONFIG, then ~/.kube/config.")
	connection.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for the control plane's NetworkClaims before giving up.")
	fss.FlagSet("output").StringVarP(&o.output, "output", "o", o.output, "Output format: json, or leave it out for a table.")
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
}

// validate checks the flags before anything connects.
func (o *registryOptions) validate() error {
	if o.output != "" && o.output != "json" {
		return fmt.Errorf("-o: unknown output format %q; write -o json or leave it out", o.output)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive; write e.g. --timeout=30s")
	}
	return nil
}

// errRegistryTimeout ends the requests of a registry subcommand when
// --timeout has passed.
var errRegistryTimeout = errors.New("--timeout passed")

// restConfig loads the kubeconfig as kubectl does: --kubeconfig when set,
// else $KUBECONFIG, else ~/.kube/config (and, inside a pod, the pod's
// service account).
func (o *registryOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err == nil:
		return config, nil
	case o.kubeconfig != "":
		return nil, fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	case clientcmd.IsEmptyConfig(err):
		where := ""
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			where = " in " + clientcmd.RecommendedConfigPathEnvVar + "=" + env
		}
		return nil, fmt.Errorf("no kubeconfig%s: set --kubeconfig=FILE or KUBECONFIG, e.g. --kubeconfig=$HOME/.local/share/sample-generic-controlplane/admin.kubeconfig", where)
	default:
		return nil, fmt.Errorf("kubeconfig %s: %w", strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator)), err)
	}
}

// start returns a registry that has read every NetworkClaim, once: the
// commands ask and exit, so they list rather than watch, and a refused
// connection or a refusal of the server fails at once.
func (o *registryOptions) start(ctx context.Context) (*networkregistry.Registry, error) {
	config, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout, errRegistryTimeout)
	defer cancel()
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
Allocated, Unavailable (DETAILS names the claim that holds an overlapping prefix) or Pending
(not decided yet). SINCE is how long ago the registry decided ("-" while Pending). -o json
prints the same records as a JSON array, with the date of each decision.`,
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
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), records)
			}
			if len(records) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No NetworkClaims found")
				return nil
			}
			return printList(cmd.OutOrStdout(), records, time.Now())
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newRegistryWhoisCommand() *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "whois <ip|prefix> [--kubeconfig=FILE]",
		Short: "Show the allocations that contain an IP address or overlap a prefix",
		Long: `Shows who holds an address: the allocated prefixes that contain an IP address (10.96.0.1,
fd00::1), or that overlap a prefix (10.96.0.0/12), with the NetworkClaim that holds each.
When none does, it says so on stderr and exits 0. -o json prints a JSON array.`,
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
			records := recordsOfAllocations(allocations)
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), records)
			}
			if len(records) == 0 {
				// kubectl's "No resources found": not an error.
				fmt.Fprintf(cmd.ErrOrStderr(), "No NetworkClaim holds %s\n", args[0])
				return nil
			}
			return printWhois(cmd.OutOrStdout(), records)
		},
	}
	o.addFlags(cmd)
	return cmd
}

// registryRecord is one claimed prefix: a row of list and whois, and an
// element of their JSON output.
type registryRecord struct {
	Claim  string `json:"claim"`
	Prefix string `json:"prefix"`
	// Status is Allocated, Unavailable or Pending.
	Status      string                      `json:"status"`
	Reference   *v1alpha1.ResourceReference `json:"reference,omitempty"`
	Description string                      `json:"description,omitempty"`
	// Date is when the registry decided; nil while pending.
	Date    *metav1.Time `json:"date,omitempty"`
	Message string       `json:"message,omitempty"`
}

// recordsOfClaims returns every spec record of the claims with the
// registry's decision on it, by claim name, then in prefix order (IPv4
// first, then CIDR order).
func recordsOfClaims(claims []*v1alpha1.NetworkClaim) []registryRecord {
	var out []registryRecord
	for _, c := range claims {
		decided := map[string]v1alpha1.AddressSpaceStatus{}
		for _, s := range c.Status.AddressSpace {
			decided[s.Prefix] = s
		}
		records := make([]prefixRecord, 0, len(c.Spec.AddressSpace))
		for _, spec := range c.Spec.AddressSpace {
			r := registryRecord{Claim: c.Name, Prefix: spec.Prefix, Status: statusPending, Reference: spec.Reference, Description: spec.Description}
			if s, ok := decided[spec.Prefix]; ok {
				date := s.Date
				r.Status, r.Date, r.Message = string(s.Status), &date, s.Message
			}
			// Validation admits only canonical prefixes; were one not,
			// the zero prefix sorts it first.
			p, _ := netip.ParsePrefix(spec.Prefix)
			records = append(records, prefixRecord{p, r})
		}
		slices.SortStableFunc(records, func(a, b prefixRecord) int { return a.prefix.Compare(b.prefix) })
		for _, r := range records {
			out = append(out, r.record)
		}
	}
	return out
}

// prefixRecord is a record with its prefix parsed, for sorting.
type prefixRecord struct {
	prefix netip.Prefix
	record registryRecord
}

// recordsOfAllocations keeps the registry's order: by prefix, then claim.
func recordsOfAllocations(allocations []networkregistry.Allocation) []registryRecord {
	out := make([]registryRecord, 0, len(allocations))
	for _, a := range allocations {
		date := metav1.NewTime(a.Date)
		out = append(out, registryRecord{
			Claim: a.Claim, Prefix: a.Prefix.String(), Status: string(v1alpha1.AllocationAllocated),
			Reference: a.Reference, Description: a.Description, Date: &date,
		})
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Claim, r.Prefix, r.Status, referenceString(r.Reference), since, details)
	}
	return tw.Flush()
}

// printWhois writes the allocations as whois's table.
func printWhois(w io.Writer, records []registryRecord) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "PREFIX\tCLAIM\tREFERENCE\tALLOCATED\tDESCRIPTION")
	for _, r := range records {
		allocated := "-"
		if r.Date != nil {
			allocated = r.Date.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Prefix, r.Claim, referenceString(r.Reference), allocated, r.Description)
	}
	return tw.Flush()
}

// printJSON writes the records as a JSON array; [] when there are none.
func printJSON(w io.Writer, records []registryRecord) error {
	if records == nil {
		records = []registryRecord{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(records)
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
