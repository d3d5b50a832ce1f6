package app

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
)

// defaultUserValidity is how long a user's certificate lasts unless
// --validity says otherwise: a client certificate cannot be revoked short of
// replacing the CA, so a day unless asked for more.
const defaultUserValidity = 24 * time.Hour

// newKubeconfigCommand writes kubeconfigs, as kubeadm's kubeconfig command.
func newKubeconfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Write kubeconfigs for users, with client certificates issued by the cluster's CA",
		Long: `Writes kubeconfigs for users, with client certificates that the CA in the data dir issues
(as kubeadm kubeconfig user does). It reads the data dir of a control plane that runs on this
machine, or ran there, as the user the control plane runs as.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newKubeconfigUserCommand())
	setGroupHelp(cmd, "[--data-dir=DIR]")
	return cmd
}

// kubeconfigUserOptions are the flags of "kubeconfig user".
type kubeconfigUserOptions struct {
	dataDir  string
	groups   []string
	validity time.Duration
	output   string
}

func (o *kubeconfigUserOptions) validate() error {
	if o.validity <= 0 {
		return errors.New("--validity must be positive, e.g. --validity=24h")
	}
	return nil
}

func newKubeconfigUserCommand() *cobra.Command {
	o := &kubeconfigUserOptions{validity: defaultUserValidity}
	cmd := &cobra.Command{
		Use:   "user NAME [--group=GROUP]... [--validity=24h] [--data-dir=DIR] [-o FILE]",
		Short: "Print a kubeconfig for a user, with a client certificate from the cluster's CA",
		Long: `Prints a kubeconfig (or writes it to -o FILE, mode 0600) that authenticates as user NAME in
the groups --group names, with a new client certificate that the CA of --data-dir issues for
--validity, and reaches the server that the data dir's admin.kubeconfig names. The user may do
nothing until an RBAC binding names it or one of its groups, e.g.
kubectl create clusterrolebinding NAME-view --clusterrole=view --user=NAME. A client
certificate cannot be revoked: keep --validity short. A group of system:masters makes an admin.`,
		Args: exactArgs("NAME", "e.g. sample-generic-controlplane kubeconfig user alice --group=developers"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			data, err := datadir.UserKubeconfig(o.dataDir, args[0], o.groups, o.validity)
			if err != nil {
				return err
			}
			if o.output == "" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if err := writePrivate(o.output, data); err != nil {
				return fmt.Errorf("-o: %w", err)
			}
			return nil
		},
	}
	var fss cliflag.NamedFlagSets
	addDataDirFlag(&fss, &o.dataDir, "Data dir whose CA issues the certificate, and whose admin.kubeconfig names the server.")
	fs := fss.FlagSet("user")
	fs.StringArrayVar(&o.groups, "group", o.groups, "A group the user is in (the certificate's O), as written: repeat the flag for several groups.")
	fs.DurationVar(&o.validity, "validity", o.validity, "How long the certificate lasts, e.g. 1h or 720h; at most until the CA expires.")
	fs.StringVarP(&o.output, "output", "o", o.output, "File to write the kubeconfig to (mode 0600) instead of stdout.")
	addFlagSets(cmd, fss)
	return cmd
}

// writePrivate writes data, which holds a key, to a file only its owner
// reads, whatever mode the file had before.
func writePrivate(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close() //nolint:errcheck // the Chmod's error says what went wrong
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close() //nolint:errcheck
		return err
	}
	return f.Close()
}
