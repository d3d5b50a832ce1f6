package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/clientconfig"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster/jointoken"
)

const (
	// defaultTokenTTL is how long a token lasts unless --ttl says otherwise:
	// long enough to start a server with it, short enough that a token
	// pasted into a chat or a shell history is soon worthless.
	defaultTokenTTL = time.Hour
	// tokenRequestTimeout bounds each request of the token commands, so
	// that a server that does not answer does not hang them.
	tokenRequestTimeout = 30 * time.Second
)

// newTokenClient makes the client the token commands use; tests replace it.
type newTokenClient func(*rest.Config) (kubernetes.Interface, error)

// newTokenCommand creates, lists and deletes join tokens.
func newTokenCommand() *cobra.Command {
	return newTokenCommandWith(func(c *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(c) }, time.Now)
}

func newTokenCommandWith(newClient newTokenClient, now func() time.Time) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and delete the join tokens that let other servers join this cluster",
		Long: `Creates, lists and deletes join tokens: what a new server presents to join the cluster
(sample-generic-controlplane --join https://HOST:PORT --token TOKEN). A token lets its holder
join and nothing else; it pins the cluster's CA, expires (--ttl) and may be for one use
(--single-use). Only a hash of it is stored, in a Secret in kube-system. The commands find the
control plane as kubectl does: in --kubeconfig, else in $KUBECONFIG, else in ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newTokenCreateCommand(&tokenOptions{newClient: newClient}),
		newTokenListCommand(&tokenOptions{newClient: newClient, now: now}),
		newTokenDeleteCommand(&tokenOptions{newClient: newClient}),
	)
	setGroupHelp(cmd, "[--kubeconfig=FILE]")
	return cmd
}

// tokenOptions are what the token subcommands share.
type tokenOptions struct {
	kubeconfig string
	newClient  newTokenClient
	now        func() time.Time
}

func (o *tokenOptions) addFlags(cmd *cobra.Command, fss cliflag.NamedFlagSets) {
	fss.FlagSet("connection").StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Kubeconfig of the control plane (its admin's). Defaults, as for kubectl, to $KUBECONFIG, then ~/.kube/config.")
	addConfigFlag(fss.FlagSet("connection"))
	addFlagSets(cmd, fss)
}

// restConfig loads the kubeconfig as the registry command does:
// --kubeconfig when set, else $KUBECONFIG, else ~/.kube/config.
func (o *tokenOptions) restConfig() (*rest.Config, error) {
	config, err := clientconfig.Load(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	if config.Timeout == 0 {
		config.Timeout = tokenRequestTimeout
	}
	return config, nil
}

// store is the token store of the control plane in the kubeconfig, and
// that kubeconfig's configuration.
func (o *tokenOptions) store() (*jointoken.Store, *rest.Config, error) {
	config, err := o.restConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := o.newClient(config)
	if err != nil {
		return nil, nil, fmt.Errorf("client of %s: %w", config.Host, err)
	}
	return jointoken.NewStore(client), config, nil
}

// clusterCAHash is the hash of the CA that the kubeconfig trusts for its
// cluster: what a token pins, so that the joining server checks that it
// joins this cluster before it sends anything.
func clusterCAHash(config *rest.Config) (string, error) {
	const useAdmin = "use a kubeconfig that names the cluster's CA, e.g. admin.kubeconfig in the data dir of a server of the cluster"
	tls := config.TLSClientConfig
	if tls.Insecure {
		return "", fmt.Errorf("the kubeconfig skips checking the server's certificate (insecure-skip-tls-verify), so it does not say which CA a token should pin; %s", useAdmin)
	}
	data := tls.CAData
	if len(data) == 0 && tls.CAFile != "" {
		var err error
		if data, err = os.ReadFile(tls.CAFile); err != nil {
			return "", fmt.Errorf("reading the cluster's CA (certificate-authority in the kubeconfig): %w", err)
		}
	}
	if len(data) == 0 {
		return "", fmt.Errorf("the kubeconfig names no CA for its cluster (certificate-authority-data or certificate-authority), and a token pins the cluster's CA; %s", useAdmin)
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		return "", fmt.Errorf("the cluster's CA in the kubeconfig: %w", err)
	}
	if len(certs) != 1 {
		return "", fmt.Errorf("the kubeconfig's CA bundle holds %d certificates, and a token pins one CA; %s", len(certs), useAdmin)
	}
	return jointoken.CAHash(certs[0]), nil
}

// tokenCreateOptions are the flags of "token create".
type tokenCreateOptions struct {
	jointoken.CreateOptions
}

// validate checks the flags before anything connects.
func (o *tokenCreateOptions) validate() error {
	if o.TTL <= 0 {
		return fmt.Errorf("--ttl must be positive, e.g. --ttl=1h")
	}
	if len(o.Usages) == 0 {
		return fmt.Errorf("--usages names no usage; write --usages=%s", strings.Join(jointoken.KnownUsages(), ","))
	}
	for _, u := range o.Usages {
		if !slices.Contains(jointoken.KnownUsages(), u) {
			return fmt.Errorf("--usages: unknown usage %q; write --usages=%s", u, strings.Join(jointoken.KnownUsages(), ","))
		}
	}
	return nil
}

func newTokenCreateCommand(o *tokenOptions) *cobra.Command {
	c := &tokenCreateOptions{jointoken.CreateOptions{TTL: defaultTokenTTL, Usages: []string{jointoken.UsageJoin}}}
	cmd := &cobra.Command{
		Use:   "create [--ttl=1h] [--single-use] [--description=TEXT] [--kubeconfig=FILE]",
		Short: "Create a join token and print it",
		Long: `Creates a join token and prints it, and only it, on stdout:
sgcp::sha256:<hash of the cluster's CA>::<ID>.<secret>. Give it to the joining server's --token.
The CA is the one the kubeconfig trusts for its cluster. The token is shown once: only a hash of
its secret is stored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			store, config, err := o.store()
			if err != nil {
				return err
			}
			caHash, err := clusterCAHash(config)
			if err != nil {
				return err
			}
			token, _, err := store.Create(cmd.Context(), caHash, c.CreateOptions)
			if err != nil {
				return fmt.Errorf("creating a join token on %s: %w", config.Host, err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), token)
			return err
		},
	}
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("token")
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "How long the token lasts, e.g. 1h or 30m; it must be positive.")
	fs.StringSliceVar(&c.Usages, "usages", c.Usages, "What the token may be used for: "+strings.Join(jointoken.KnownUsages(), ", ")+".")
	fs.BoolVar(&c.SingleUse, "single-use", c.SingleUse, "Make the token's first use its last: one server joins with it.")
	fs.StringVar(&c.Description, "description", c.Description, "What the token is for, shown by token list, e.g. --description=node-2.")
	o.addFlags(cmd, fss)
	return cmd
}

func newTokenListCommand(o *tokenOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--kubeconfig=FILE]",
		Short: "List the join tokens: ID, expiry, usages, single use, description",
		Long: `Lists the join tokens of the cluster by ID, with when each expires (an expired token is shown
until the next token create removes it), what it may be used for, whether it is for one use, and
its description. The secrets are not stored, so they cannot be shown.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, config, err := o.store()
			if err != nil {
				return err
			}
			infos, err := store.List(cmd.Context())
			if err != nil {
				return fmt.Errorf("%s: %w", config.Host, err)
			}
			if len(infos) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No join tokens found")
				return nil
			}
			return printTokens(cmd.OutOrStdout(), infos, o.now())
		},
	}
	o.addFlags(cmd, cliflag.NamedFlagSets{})
	return cmd
}

// printTokens writes the tokens as list's table.
func printTokens(w io.Writer, infos []jointoken.Info, now time.Time) error {
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "ID\tEXPIRES\tUSAGES\tSINGLE-USE\tDESCRIPTION")
	for _, i := range infos {
		expires := i.Expires.UTC().Format(time.RFC3339)
		if i.Expired(now) {
			expires += " (expired)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.ID, expires, strings.Join(i.Usages, ","), strconv.FormatBool(i.SingleUse), i.Description)
	}
	return tw.Flush()
}

func newTokenDeleteCommand(o *tokenOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete ID... [--kubeconfig=FILE]",
		Short: "Delete join tokens by ID",
		Long: `Deletes join tokens by ID (the 6 characters before the dot, as token list shows them): no
server can join with them from then on. Servers that joined with a token stay.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("token delete takes the IDs of the tokens to delete, e.g. token delete k3x9q2; token list shows them")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, ids []string) error {
			store, _, err := o.store()
			if err != nil {
				return err
			}
			var errs []error
			for _, id := range ids {
				if err := store.Delete(cmd.Context(), id); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "join token %s deleted\n", id)
			}
			return errors.Join(errs...)
		},
	}
	o.addFlags(cmd, cliflag.NamedFlagSets{})
	return cmd
}
