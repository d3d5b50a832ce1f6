package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/etcdcluster"
	"sigs.k8s.io/sample-generic-controlplane/kana/registrycli"
)

// newClusterCommand shows and changes the membership of the etcd cluster
// that the control planes' embedded members form.
func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the members of the control planes' etcd cluster, and remove one",
		Long: `Shows the members of the etcd cluster that the control planes' embedded etcd members form
(their roles, the leader, their health), and removes a member. It asks a running control
plane's API server, which it finds as kubectl does: in --kubeconfig, else in $KUBECONFIG, else
in ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newClusterMembersCommand(), newClusterRemoveCommand())
	setGroupHelp(cmd, "[--kubeconfig=FILE]")
	return cmd
}

// clusterOptions are the flags the cluster subcommands share.
type clusterOptions struct {
	kubeconfig string
	timeout    time.Duration
}

func (o *clusterOptions) addFlags(fss *cliflag.NamedFlagSets) {
	connection := fss.FlagSet("connection")
	connection.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "Kubeconfig of a control plane of the cluster. Defaults, as for kubectl, to $KUBECONFIG, then ~/.kube/config.")
	connection.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for the control plane before giving up.")
}

func (o *clusterOptions) validate() error {
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive; write e.g. --timeout=30s")
	}
	return nil
}

// membersClient is a REST client of the control plane config names, for
// etcdcluster.MembersPath (a non-resource URL).
func membersClient(config *rest.Config) (*rest.RESTClient, error) {
	config = rest.CopyConfig(config)
	// Decodes the metav1.Status of the server's errors.
	config.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return client, nil
}

const (
	outputTable = "table"
	outputJSON  = "json"
)

func newClusterMembersCommand() *cobra.Command {
	o := &clusterOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "members [--kubeconfig=FILE] [-o table|json]",
		Short: "List the members of the etcd cluster, their roles, the leader and their health",
		Long: `Lists the members of the etcd cluster as the control plane's own member sees them: NAME, ID
(etcd's, in hex), PEER URL, ROLE (a voter, or a learner that receives the log but does not
vote), LEADER (*), HEALTHY, DB SIZE and, for an unhealthy member, MESSAGE, which says why. A
member is healthy while its control plane reports its status: every 10s, and a report counts
for 40s. A member added that has not started yet has no name. -o json prints the members as a
JSON array, with each member's API server and last report.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outputTable && output != outputJSON {
				return fmt.Errorf("-o: unknown output format %q; write -o table or -o json", output)
			}
			if err := o.validate(); err != nil {
				return err
			}
			members, err := o.list(cmd.Context())
			if err != nil {
				return err
			}
			if output == outputJSON {
				return printMembersJSON(cmd.OutOrStdout(), members)
			}
			return printMembers(cmd.OutOrStdout(), members)
		},
	}
	var fss cliflag.NamedFlagSets
	fss.FlagSet("output").StringVarP(&output, "output", "o", outputTable, "Output format: table or json.")
	o.addFlags(&fss)
	addFlagSets(cmd, fss)
	return cmd
}

func (o *clusterOptions) list(ctx context.Context) ([]etcdcluster.MemberStatus, error) {
	config, err := registrycli.RESTConfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := membersClient(config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	body, err := client.Get().AbsPath(etcdcluster.MembersPath).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members through %s: %w", config.Host, err)
	}
	var members []etcdcluster.MemberStatus
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, fmt.Errorf("listing the etcd members through %s: the answer is not a list of members: %w", config.Host, err)
	}
	return members, nil
}

// printMembers writes the members as a table.
func printMembers(w io.Writer, members []etcdcluster.MemberStatus) error {
	tw := tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tPEER URL\tROLE\tLEADER\tHEALTHY\tDB SIZE\tMESSAGE")
	for _, m := range members {
		name, leader, size := m.Name, "", "-"
		if name == "" {
			name = "-"
		}
		if m.Leader {
			leader = "*"
		}
		if m.DBSize > 0 {
			size = humanize.IBytes(uint64(m.DBSize))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\n", name, m.ID, strings.Join(m.PeerURLs, ","), m.Role(), leader, m.Healthy, size, m.Message)
	}
	return tw.Flush()
}

// printMembersJSON writes the members as an indented JSON array; [] when
// there are none.
func printMembersJSON(w io.Writer, members []etcdcluster.MemberStatus) error {
	if members == nil {
		members = []etcdcluster.MemberStatus{}
	}
	data, err := json.MarshalIndent(members, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

func newClusterRemoveCommand() *cobra.Command {
	o := &clusterOptions{}
	var force bool
	cmd := &cobra.Command{
		Use:   "remove NAME [--force] [--kubeconfig=FILE]",
		Short: "Remove a member from the etcd cluster",
		Long: `Removes the member NAME (or, for a member that has not started yet, its ID) from the etcd
cluster. It refuses a removal that would leave the remaining voters without a quorum (a
majority) of healthy voters, and the removal of the last voter; --force removes a member
anyway while the other members say it would lose the quorum (etcd itself still refuses when, by
its own peer connections, it would). The leader hands leadership to a healthy voter before it
goes; a removal of the leader sent to another member's control plane is sent again, once, to the
leader's API server, with the same credentials.`,
		Args: exactArgs("NAME", "e.g. sample-generic-controlplane cluster remove host-1a2b3c4d; cluster members lists the names"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.Contains(args[0], "/") {
				return fmt.Errorf("NAME %q: write a member's name as cluster members shows it, e.g. host-1a2b3c4d", args[0])
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.remove(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], force)
		},
	}
	var fss cliflag.NamedFlagSets
	fss.FlagSet("removal").BoolVar(&force, "force", false, "Remove the member even though the other members' health says the remaining voters would have no quorum of healthy voters.")
	o.addFlags(&fss)
	addFlagSets(cmd, fss)
	return cmd
}

func (o *clusterOptions) remove(ctx context.Context, out, errOut io.Writer, name string, force bool) error {
	config, err := registrycli.RESTConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = removeMember(ctx, config, name, force)
	leaderURL, notLeader := leaderAPIServer(err)
	if notLeader && leaderURL != "" && (config.Insecure || (len(config.CAData) == 0 && config.CAFile == "")) {
		// The URL comes from a status report any writer of Leases in
		// kube-system could have set: send credentials there only to a
		// server the cluster's CA vouches for.
		return fmt.Errorf("%s is the etcd leader; only its control plane (%s) can hand leadership over first, and the kubeconfig does not verify servers against a CA, so its credentials are not sent there: run the command with that server's kubeconfig", name, leaderURL)
	}
	if notLeader && leaderURL != "" {
		// Admin credentials are valid on every server of the cluster:
		// they share the CA, which the kubeconfig verifies the leader's
		// server against.
		fmt.Fprintf(errOut, "%s is the etcd leader; only its control plane can hand leadership over first: retrying through %s\n", name, leaderURL)
		leader := rest.CopyConfig(config)
		leader.Host = leaderURL
		leader.TLSClientConfig.ServerName = ""
		config = leader
		err = removeMember(ctx, config, name, force)
		if _, again := leaderAPIServer(err); again {
			return fmt.Errorf("%s is no longer the leader's: leadership moved meanwhile; run the command again", leaderURL)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", config.Host, err)
	}
	fmt.Fprintf(out, "member %s removed\n", name)
	return nil
}

// removeMember asks the control plane config names to remove member name.
func removeMember(ctx context.Context, config *rest.Config, name string, force bool) error {
	client, err := membersClient(config)
	if err != nil {
		return err
	}
	req := client.Delete().AbsPath(etcdcluster.MembersPath, name)
	if force {
		req = req.Param("force", "true")
	}
	return req.Do(ctx).Error()
}

// leaderAPIServer says whether err is the server's answer that the member
// is the leader and the server's member is not, and where the leader's API
// server is.
func leaderAPIServer(err error) (string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Reason != etcdcluster.StatusReasonNotLeader {
		return "", false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == etcdcluster.CauseTypeLeaderAPIServerURL {
				return c.Message, true
			}
		}
	}
	return "", true
}
