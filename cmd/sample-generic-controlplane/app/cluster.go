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
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/clientconfig"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
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
	addConfigFlag(connection)
	connection.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for the control plane before giving up.")
}

func (o *clusterOptions) validate() error {
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive; write e.g. --timeout=30s")
	}
	return nil
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

func (o *clusterOptions) list(ctx context.Context) ([]cluster.MemberStatus, error) {
	config, err := clientconfig.Load(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	return cluster.NewMembersClient(config).List(ctx)
}

// printMembers writes the members as a table.
func printMembers(w io.Writer, members []cluster.MemberStatus) error {
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
func printMembersJSON(w io.Writer, members []cluster.MemberStatus) error {
	if members == nil {
		members = []cluster.MemberStatus{}
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
	config, err := clientconfig.Load(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	leader, err := cluster.NewMembersClient(config).Remove(ctx, name, force)
	if leader != "" {
		fmt.Fprintf(errOut, "%s is the etcd leader; only its control plane can hand leadership over first: retrying through %s\n", name, leader)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "member %s removed\n", name)
	return nil
}
