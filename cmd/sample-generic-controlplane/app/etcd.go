package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/etcdclient"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/externaltls"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
)

// newEtcdCommand looks after the control plane's etcd as etcdctl's
// maintenance commands do, without etcdctl: the embedded member's socket
// is reachable only through its data dir.
func newEtcdCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Show the status of the control plane's etcd; compact, defragment and disarm its alarms",
		Long: `Looks after the etcd of a running control plane, as etcdctl's maintenance commands do: of its
embedded member, found through --data-dir, or with --etcd-servers of an external cluster. The
control plane recovers its embedded member from a full database on its own (docs/user-guide.md,
"Troubleshooting"); these commands show what it sees, and do by hand what an external cluster's
operator does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	alarm := &cobra.Command{
		Use:   "alarm",
		Short: "List or disarm etcd's alarms",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	alarm.AddCommand(newEtcdAlarmListCommand(), newEtcdAlarmDisarmCommand())
	setGroupHelp(alarm, "[--data-dir=DIR | --etcd-servers=URL,...]")
	cmd.AddCommand(newEtcdStatusCommand(), newEtcdCompactCommand(), newEtcdDefragCommand(), alarm)
	setGroupHelp(cmd, "[--data-dir=DIR | --etcd-servers=URL,...]")
	return cmd
}

// etcdTarget are the flags that say which etcd a command works on, as for
// the control plane: the embedded member of --data-dir, or --etcd-servers.
type etcdTarget struct {
	dataDir                   string
	etcdServers               []string
	caFile, certFile, keyFile string
}

func (o *etcdTarget) addFlags(fss *cliflag.NamedFlagSets, what string) {
	addDataDirFlag(fss, &o.dataDir, "Data dir of the running control plane whose embedded etcd to "+what+".")
	etcd := fss.FlagSet("external etcd")
	etcd.StringSliceVar(&o.etcdServers, "etcd-servers", nil, "Members of an external etcd cluster to "+what+", as for the control plane; --data-dir is not used then.")
	etcd.StringVar(&o.caFile, "etcd-cafile", "", "CA that verifies the etcd members' serving certificates.")
	etcd.StringVar(&o.certFile, "etcd-certfile", "", "Client certificate for the etcd members.")
	etcd.StringVar(&o.keyFile, "etcd-keyfile", "", "Key of --etcd-certfile.")
}

// endpoints are the members' client URLs: --etcd-servers, or the embedded
// member's socket.
func (o *etcdTarget) endpoints() ([]string, error) {
	if len(o.etcdServers) > 0 {
		return o.etcdServers, nil
	}
	endpoint, err := datadir.EmbeddedEtcdEndpoint(o.dataDir)
	if err != nil {
		return nil, err
	}
	return []string{endpoint}, nil
}

// Timeouts of the etcd commands: a member without a quorum answers
// nothing that needs one, and its client retries for a long while.
const (
	etcdRequestTimeout     = 30 * time.Second
	etcdMaintenanceTimeout = 10 * time.Minute
)

// connect returns a client of the members, once one of them answered.
func (o *etcdTarget) connect(ctx context.Context) (*clientv3.Client, error) {
	endpoints, err := o.endpoints()
	if err != nil {
		return nil, err
	}
	if err := o.checkTLS(ctx, endpoints); err != nil {
		return nil, err
	}
	cfg, err := etcdclient.Config(endpoints, o.caFile, o.certFile, o.keyFile)
	if err != nil {
		return nil, err
	}
	return etcdclient.Connect(ctx, cfg)
}

// checkTLS names the flag to fix when the TLS files cannot reach the
// members at endpoints (externaltls.Check), rather than report them as
// members that did not answer.
func (o *etcdTarget) checkTLS(ctx context.Context, endpoints []string) error {
	return externaltls.Check(ctx, endpoints, externaltls.Files{CAFile: o.caFile, CertFile: o.certFile, KeyFile: o.keyFile})
}

// newEtcdClientCommand is a command of the etcd group: it takes the
// etcdTarget flags, connects within timeout, and runs run with the client.
func newEtcdClientCommand(cmd *cobra.Command, what string, timeout time.Duration, run func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error) *cobra.Command {
	o := &etcdTarget{}
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		client, err := o.connect(ctx)
		if err != nil {
			return err
		}
		defer client.Close() //nolint:errcheck // nothing to flush
		return run(ctx, cmd, client)
	}
	var fss cliflag.NamedFlagSets
	o.addFlags(&fss, what)
	addFlagSets(cmd, fss)
	return cmd
}

func newEtcdStatusCommand() *cobra.Command {
	return newEtcdClientCommand(&cobra.Command{
		Use:   "status [--data-dir=DIR | --etcd-servers=URL,...]",
		Short: "Show etcd's members, leader, revision, database sizes, quota and alarms",
		Long: `Shows the members of the control plane's etcd cluster, which leads it, and, for each member it
reaches, its database size, the part of it in use and its quota, then the cluster's revision and
alarms. A database reaching its quota raises the NOSPACE alarm, and etcd refuses writes until it
is disarmed. The peers of an embedded member listen on sockets on their own machines: run the
command there for their sizes.`,
	}, "show", etcdRequestTimeout, func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error {
		st, err := maintenance.GetStatus(ctx, client)
		if st == nil {
			return err
		}
		if err := printEtcdStatus(cmd.OutOrStdout(), st); err != nil {
			return err
		}
		return err
	})
}

func printEtcdStatus(out io.Writer, st *maintenance.Status) error {
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "MEMBER\tID\tROLE\tLEADER\tVERSION\tDB SIZE\tIN USE\tQUOTA\tENDPOINT")
	for _, m := range st.Members {
		role, leader := "voter", ""
		if m.Learner {
			role = "learner"
		}
		if m.ID == st.LeaderID {
			leader = "yes"
		}
		version, size, inUse, quota, endpoint := "-", "-", "-", "-", m.Endpoint
		switch {
		case m.Reached():
			version, size, inUse = m.Version, humanize.IBytes(uint64(m.DBSize)), humanize.IBytes(uint64(m.DBSizeInUse))
			if m.Quota > 0 {
				quota = humanize.IBytes(uint64(m.Quota))
			}
		case m.Err != nil:
			endpoint += " (not answering: " + m.Err.Error() + ")"
		default:
			endpoint = "(not one of the endpoints asked)"
		}
		fmt.Fprintf(w, "%s\t%x\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.DisplayName(), m.ID, role, leader, version, size, inUse, quota, endpoint)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nRevision: %d\n", st.Revision)
	if st.Leader() == nil {
		fmt.Fprintln(out, "Leader:   none: the cluster has no quorum, or the members asked do not know it")
	}
	if st.AlarmsErr != nil {
		fmt.Fprintf(out, "Alarms:   unknown: a member reports one, and %v\n", st.AlarmsErr)
		return nil
	}
	return printAlarms(out, st.Alarms)
}

func printAlarms(out io.Writer, alarms []maintenance.Alarm) error {
	if len(alarms) == 0 {
		fmt.Fprintln(out, "Alarms:   none")
		return nil
	}
	var names []string
	for _, a := range alarms {
		names = append(names, a.Type+" (member "+a.Member+")")
	}
	fmt.Fprintf(out, "Alarms:   %s\n", strings.Join(names, ", "))
	for _, a := range alarms {
		if a.Type == maintenance.NoSpace {
			fmt.Fprintln(out, `          NOSPACE: the database reached its quota and etcd refuses writes. Delete what you no
          longer need, then "etcd compact", "etcd defrag" and "etcd alarm disarm"; the control
          plane does it on its own for its embedded member once the data in use is under 80%
          of the quota.`)
			break
		}
	}
	return nil
}

func newEtcdCompactCommand() *cobra.Command {
	return newEtcdClientCommand(&cobra.Command{
		Use:   "compact [--data-dir=DIR | --etcd-servers=URL,...]",
		Short: "Compact etcd's history up to its current revision",
		Long: `Compacts the history of etcd's keys up to the current revision, as the API servers' compactor
does every 5 minutes (up to the revision of its previous round), and records the revision where
the API servers' compactors read it. Watches from an older revision then fail with "too old
resource version" and their clients list again. Compaction frees room inside the database
file; "etcd defrag" gives it back to the filesystem.

Needed by hand when the NOSPACE alarm is raised on an external cluster: the API servers'
compaction is a write, which the alarm refuses.`,
	}, "compact", etcdMaintenanceTimeout, func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error {
		rev, err := maintenance.Compact(ctx, client)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Compacted etcd to revision %d\n", rev)
		return nil
	})
}

func newEtcdDefragCommand() *cobra.Command {
	return newEtcdClientCommand(&cobra.Command{
		Use:   "defrag [--data-dir=DIR | --etcd-servers=URL,...]",
		Short: "Defragment the database of each etcd member, one at a time",
		Long: `Defragments the database of each member named (the embedded member, or each of --etcd-servers),
one after the other: the room that compaction freed inside the file goes back to the
filesystem. A member answers no request while it defragments (seconds for a database of
gigabytes), so a cluster keeps its quorum only when its members are defragmented one at a time,
as here. Compact first ("etcd compact"), or there is little to give back.

Needed when the database file is much larger than the data in use (see "etcd status"), and to
recover from the NOSPACE alarm. The control plane defragments its embedded member itself when
it starts with more than half of the file free, and when it recovers from a full database.`,
	}, "defragment", etcdMaintenanceTimeout, func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error {
		for _, endpoint := range client.Endpoints() {
			before, err := client.Status(ctx, endpoint)
			if err != nil {
				return fmt.Errorf("etcd at %s: %w", endpoint, err)
			}
			if err := maintenance.Defragment(ctx, client, endpoint); err != nil {
				return err
			}
			after, err := client.Status(ctx, endpoint)
			if err != nil {
				return fmt.Errorf("etcd at %s: %w", endpoint, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Defragmented etcd at %s: %s → %s (%s in use)\n", endpoint,
				humanize.IBytes(uint64(before.DbSize)), humanize.IBytes(uint64(after.DbSize)), humanize.IBytes(uint64(after.DbSizeInUse)))
		}
		return nil
	})
}

func newEtcdAlarmListCommand() *cobra.Command {
	return newEtcdClientCommand(&cobra.Command{
		Use:   "list [--data-dir=DIR | --etcd-servers=URL,...]",
		Short: "List etcd's active alarms",
	}, "ask", etcdRequestTimeout, func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error {
		st, err := maintenance.GetStatus(ctx, client)
		if st == nil {
			return err
		}
		return printAlarms(cmd.OutOrStdout(), st.Alarms)
	})
}

func newEtcdAlarmDisarmCommand() *cobra.Command {
	return newEtcdClientCommand(&cobra.Command{
		Use:   "disarm [--data-dir=DIR | --etcd-servers=URL,...]",
		Short: "Disarm etcd's active alarms",
		Long: `Disarms every active alarm of the cluster, as etcdctl alarm disarm does. A NOSPACE alarm disarmed
while a member's database is still over its quota is raised again by the next write: delete
what you no longer need, "etcd compact" and "etcd defrag" first. The command refuses to disarm
a NOSPACE alarm while a member it reaches is still over its quota.`,
	}, "disarm", etcdRequestTimeout, func(ctx context.Context, cmd *cobra.Command, client *clientv3.Client) error {
		st, err := maintenance.GetStatus(ctx, client)
		if st == nil {
			return err
		}
		if len(st.Alarms) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "No alarms to disarm")
			return nil
		}
		if err := maintenance.SafeToDisarm(st); err != nil {
			return err
		}
		if err := maintenance.Disarm(ctx, client, st.Alarms); err != nil {
			return err
		}
		for _, a := range st.Alarms {
			fmt.Fprintf(cmd.OutOrStdout(), "Disarmed %s (member %s)\n", a.Type, a.Member)
		}
		return nil
	})
}
