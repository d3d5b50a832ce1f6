package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/snapshot"
)

// newSnapshotCommand saves, lists and restores snapshots of a control
// plane's etcd.
func newSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save, list and restore snapshots of the control plane's etcd",
		Long: `Saves a snapshot of the etcd of a running control plane (its embedded member, or one member of
an external cluster), lists the snapshots in <data-dir>/snapshots, and restores a snapshot into a
stopped control plane's data dir. The control plane takes snapshots of its embedded etcd on its
own too, into <data-dir>/snapshots (--embedded-etcd-snapshot-schedule).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSnapshotSaveCommand(), newSnapshotListCommand(), newSnapshotRestoreCommand())
	setGroupHelp(cmd, "[--data-dir=DIR]")
	return cmd
}

// addDataDirFlag adds --data-dir to fss, as the control plane has it.
func addDataDirFlag(fss *cliflag.NamedFlagSets, dataDir *string, usage string) {
	*dataDir = controlplane.DefaultDataDir()
	fss.FlagSet("control plane").StringVar(dataDir, "data-dir", *dataDir, usage+" Defaults, as for the control plane, to $XDG_DATA_HOME/sample-generic-controlplane or ~/.local/share/sample-generic-controlplane.")
	addConfigFlag(fss.FlagSet("control plane"))
}

func addFlagSets(cmd *cobra.Command, fss cliflag.NamedFlagSets) {
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
}

// snapshotSaveOptions are the flags of "snapshot save".
type snapshotSaveOptions struct {
	etcdTarget
}

// source is the etcd member to take the snapshot from.
func (o *snapshotSaveOptions) source() (snapshot.Source, error) {
	switch len(o.etcdServers) {
	case 0:
		endpoint, err := datadir.EmbeddedEtcdEndpoint(o.dataDir)
		return snapshot.Source{Endpoint: endpoint}, err
	case 1:
		return snapshot.Source{Endpoint: o.etcdServers[0], CAFile: o.caFile, CertFile: o.certFile, KeyFile: o.keyFile}, nil
	default:
		return snapshot.Source{}, fmt.Errorf("--etcd-servers names %d endpoints: a snapshot is the state of one member, so name one (as etcdctl snapshot save requires), e.g. --etcd-servers=%s", len(o.etcdServers), o.etcdServers[0])
	}
}

func newSnapshotSaveCommand() *cobra.Command {
	o := &snapshotSaveOptions{}
	cmd := &cobra.Command{
		Use:   "save FILE [--data-dir=DIR | --etcd-servers=URL]",
		Short: "Save a snapshot of the etcd of a running control plane to FILE",
		Long: `Saves a consistent snapshot of the etcd of a running control plane to FILE: of its embedded member,
found through --data-dir, or with --etcd-servers of that one member of an external etcd cluster.
The snapshot is written to a temporary file beside FILE, synced to disk and its sha256 hash
verified before it replaces FILE. It holds every object, Secrets included: keep it as safe as
the data dir.`,
		Args: exactArgs("FILE", "e.g. sample-generic-controlplane snapshot save /backup/cp.db"),
		RunE: func(cmd *cobra.Command, args []string) error {
			source, err := o.source()
			if err != nil {
				return err
			}
			file, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if info, err := os.Stat(filepath.Dir(file)); err != nil || !info.IsDir() {
				return fmt.Errorf("the directory of %s does not exist; create it, or choose a FILE in an existing directory", file)
			}
			if err := o.checkTLS(cmd.Context(), []string{source.Endpoint}); err != nil {
				return err
			}
			path, status, err := snapshot.Save(cmd.Context(), source, filepath.Dir(file), func(snapshot.Status) string {
				return filepath.Base(file)
			})
			if err != nil {
				return err
			}
			printSaved(cmd.OutOrStdout(), path, status)
			return nil
		},
	}
	var fss cliflag.NamedFlagSets
	o.addFlags(&fss, "snapshot")
	fss.FlagSet("external etcd").Lookup("etcd-servers").Usage = "The one member of an external etcd cluster to take the snapshot from, as for the control plane; --data-dir is not used then."
	addFlagSets(cmd, fss)
	return cmd
}

func printSaved(out io.Writer, path string, status snapshot.Status) {
	fmt.Fprintf(out, "Saved snapshot %s\n", path)
	fmt.Fprintf(out, "  revision: %d\n", status.Revision)
	fmt.Fprintf(out, "  keys:     %d\n", status.Keys)
	fmt.Fprintf(out, "  size:     %s (%d bytes)\n", humanize.IBytes(uint64(status.Size)), status.Size)
}

func newSnapshotListCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "list [--data-dir=DIR]",
		Short: "List the snapshots in <data-dir>/snapshots, and whether each verifies",
		Long: `Lists the snapshots (*.db files) in <data-dir>/snapshots, oldest first: the control plane's scheduled
snapshots and any saved there by hand. Each is read in full to verify its sha256 hash: VERIFIED is
"yes", or why not. TIME is when a scheduled snapshot was taken (in UTC, from its name), or the
file's modification time for others. It works whether or not the control plane runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			snapshots, err := snapshot.List(dataDir)
			if err != nil {
				return err
			}
			if len(snapshots) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "No snapshots in %s\n", snapshot.ScheduledDir(dataDir))
				return nil
			}
			return printSnapshots(cmd.OutOrStdout(), snapshots)
		},
	}
	var fss cliflag.NamedFlagSets
	addDataDirFlag(&fss, &dataDir, "Data dir whose snapshots to list.")
	addFlagSets(cmd, fss)
	return cmd
}

func printSnapshots(out io.Writer, snapshots []snapshot.File) error {
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(w, "NAME\tTIME\tREVISION\tKEYS\tSIZE\tVERIFIED")
	for _, s := range snapshots {
		revision, keys, verified := "-", "-", "yes"
		if s.Err != nil {
			verified = "no: " + s.Err.Error()
		} else {
			revision, keys = fmt.Sprint(s.Status.Revision), fmt.Sprint(s.Status.Keys)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Time.UTC().Format(time.RFC3339), revision, keys, humanize.IBytes(uint64(s.Size)), verified)
	}
	return w.Flush()
}

func newSnapshotRestoreCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "restore FILE [--data-dir=DIR]",
		Short: "Replace the embedded etcd data of a stopped control plane with the snapshot in FILE",
		Long: `Replaces the embedded etcd member in <data-dir>/etcd with one restored from the snapshot in FILE,
whose sha256 hash must verify; the PKI and admin.kubeconfig stay. The control plane must be
stopped: the restore refuses while one runs on the data dir, and holds the data dir's lock
while it works. The etcd data it replaces is moved aside, to <data-dir>/etcd.pre-restore-<time>,
and removed by the next start once the restored member runs. A restore that fails leaves the
data dir as it was.

Revisions continue one billion past the snapshot's, and older revisions are compacted, so that
no client ever sees a resourceVersion go back. A control plane that uses --etcd-servers keeps
its objects in that cluster: restore it with etcdutl snapshot restore.`,
		Args: exactArgs("FILE", "e.g. sample-generic-controlplane snapshot restore /backup/cp.db"),
		RunE: func(cmd *cobra.Command, args []string) error {
			result, err := datadir.RestoreSnapshot(cmd.Context(), dataDir, args[0])
			if err != nil {
				return err
			}
			printRestored(cmd.OutOrStdout(), args[0], result)
			return nil
		},
	}
	var fss cliflag.NamedFlagSets
	addDataDirFlag(&fss, &dataDir, "Data dir of the stopped control plane to restore into.")
	addFlagSets(cmd, fss)
	return cmd
}

func printRestored(out io.Writer, file string, r *datadir.RestoreResult) {
	fmt.Fprintf(out, "Restored snapshot %s (revision %d, %d keys) into %s\n", file, r.Snapshot.Revision, r.Snapshot.Keys, r.EtcdDir)
	if r.ReplacedDir != "" {
		fmt.Fprintf(out, "The etcd data it replaced is in %s until the control plane has started on the restored data.\n", r.ReplacedDir)
	}
	fmt.Fprintln(out, "Start the control plane to serve the restored objects.")
}

// exactArgs requires the one argument named name, and says how to write it.
func exactArgs(name, example string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0 || len(args) == 1 && args[0] == "":
			return fmt.Errorf("%s needs %s; %s", cmd.CommandPath(), name, example)
		case len(args) > 1:
			return fmt.Errorf("%s takes one %s, got %d arguments (%s); %s", cmd.CommandPath(), name, len(args), strings.Join(args, " "), example)
		}
		return nil
	}
}
