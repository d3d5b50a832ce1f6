// Package app is the command line of sample-generic-controlplane: flags in,
// the controlplane library out.
package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/kana"
	"sigs.k8s.io/sample-generic-controlplane/kana/registrycli"
)

// processStart approximates when the process started, for the time-to-ready figure.
var processStart = time.Now()

// NewCommand returns the root command: with no subcommand it runs the
// all-in-one control plane until the command's context is done (main passes
// one that ends on SIGTERM or SIGINT).
func NewCommand() *cobra.Command {
	opts := NewOptions()
	cmd := &cobra.Command{
		Use:   "sample-generic-controlplane",
		Short: "A Kubernetes-style control plane without the container domain",
		Long: `sample-generic-controlplane serves the generic Kubernetes APIs (namespaces, configmaps,
secrets, service accounts, events, RBAC, leases, admission configuration, flow control,
CRDs and APIServices) on an embedded etcd, in one process.

With no flags it keeps everything under --data-dir, listens on 127.0.0.1:6443 and writes
an admin kubeconfig that it prints when ready.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		PersistentPreRun: func(*cobra.Command, []string) {
			// Loopback clients must not log the warnings they cause themselves.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			flushLogs, err := opts.ApplyToProcess(true)
			if err != nil {
				return err
			}
			defer flushLogs()
			cliflag.PrintFlags(cmd.Flags())
			return run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}

	var fss cliflag.NamedFlagSets
	opts.AddFlags(&fss)
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)

	cmd.AddCommand(newVersionCommand(), newControllersCommand(), registrycli.NewCommand(), newSnapshotCommand(), newTokenCommand(), newClusterCommand())
	// The flag-set help prints no commands; list them with the description.
	cmd.Long += "\n\nCommands:"
	for _, sub := range cmd.Commands() {
		cmd.Long += fmt.Sprintf("\n  %-12s %s", sub.Name(), sub.Short)
	}
	return cmd
}

// NewOptions are the binary's options: the generic control plane with the
// NetworkClaim registry plugged in, as a distribution composes its own.
func NewOptions() *controlplane.Options {
	opts := controlplane.NewOptions()
	// Fails only on a programming error (a name taken twice), which every
	// test of the command catches.
	utilruntime.Must(kana.Install(opts))
	return opts
}

func run(ctx context.Context, opts *controlplane.Options, out io.Writer) error {
	restoreGC := raiseGCForStartup()
	defer restoreGC()
	return controlplane.Serve(ctx, opts, func(server *controlplane.Server) {
		printReady(out, server, time.Since(processStart))
		restoreGC()
	})
}

func printReady(out io.Writer, server *controlplane.Server, took time.Duration) {
	fmt.Fprintf(out, "\nsample-generic-controlplane is ready (%.2fs)\n", took.Seconds())
	fmt.Fprintf(out, "  API server: %s\n", server.URL())
	fmt.Fprintf(out, "  data dir:   %s\n", server.DataDir())
	fmt.Fprintf(out, "\n  export KUBECONFIG=%s\n\n", server.KubeconfigPath())
}
