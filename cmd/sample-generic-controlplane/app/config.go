package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/configfile"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/datadir"
)

// configFlag names the config file, on the root command and on the
// subcommands that reach a server through its data dir or kubeconfig.
const configFlag = "config"

func addRootConfigFlags(fs *pflag.FlagSet, printConfig *bool) {
	fs.String(configFlag, "", "YAML file of flag values, keyed by the flags' long names (data-dir: /var/lib/sample-generic-controlplane, tls-san: [a, b], feature-gates: {KANA: true}). Files in FILE.d/*.yaml follow it in lexical order; a flag on the command line wins over both.")
	fs.BoolVar(printConfig, "print-config", false, "Print the effective configuration, every flag with where its value came from (default, file, drop-in, flag), secrets redacted, and exit.")
}

// addConfigFlag gives a subcommand --config: it reads the server's config
// file for the flags they share (--data-dir, --etcd-servers, ...), so that
// "etcd status --config /etc/sample-generic-controlplane/config.yaml"
// reaches the server the file configures.
func addConfigFlag(fs *pflag.FlagSet) {
	fs.String(configFlag, "", "Config file of the control plane (as its --config): the flags this command shares with it are read from there, unless given here. A command that takes --kubeconfig uses admin.kubeconfig in the file's data-dir.")
}

// applyConfigFile sets the flags of cmd that its --config file (and the
// drop-ins) set and the command line did not, and returns where each flag
// took its value from; nil sources without --config. The keys are checked
// against the root command's flags, which are the server's: a subcommand
// reads the server's file whole and takes the keys it knows.
func applyConfigFile(cmd *cobra.Command) (map[string]configfile.Source, error) {
	f := cmd.Flags().Lookup(configFlag)
	if f == nil || f.Value.String() == "" {
		return nil, nil
	}
	config, err := configfile.Load(f.Value.String(), cmd.Root().Flags())
	if err != nil {
		return nil, err
	}
	sources, err := config.Apply(cmd.Flags())
	if err != nil {
		return nil, err
	}
	kubeconfig := cmd.Flags().Lookup("kubeconfig")
	if dir, ok := config.Value("data-dir"); ok && cmd != cmd.Root() && kubeconfig != nil && !kubeconfig.Changed && cmd.Flags().Lookup("data-dir") == nil {
		if err := cmd.Flags().Set("kubeconfig", (&datadir.Dir{Path: dir}).KubeconfigPath()); err != nil {
			return nil, fmt.Errorf("--kubeconfig from the data-dir of %s: %w", f.Value.String(), err)
		}
	}
	return sources, nil
}
