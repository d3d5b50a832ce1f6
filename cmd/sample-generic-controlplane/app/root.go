// Package app is the command line of sample-generic-controlplane: flags in,
// the controlplane library out.
package app

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/configfile"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/sdnotify"
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
	var printConfig bool
	// sources are where the root's flags took their values from (--config).
	var sources map[string]configfile.Source
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
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// Loopback clients must not log the warnings they cause themselves.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			s, err := applyConfigFile(cmd)
			if cmd == cmd.Root() {
				sources = s
			}
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()
			if printConfig {
				return configfile.Print(cmd.OutOrStdout(), cmd.Flags(), sources)
			}
			flushLogs, err := opts.ApplyToProcess(true)
			if err != nil {
				return err
			}
			defer flushLogs()
			printFlags(cmd.Flags())
			return run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}

	var fss cliflag.NamedFlagSets
	opts.AddFlags(&fss)
	addRootConfigFlags(fss.FlagSet("global"), &printConfig)
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)

	cmd.AddCommand(newVersionCommand(), newControllersCommand(kana.Controllers()...), registrycli.NewCommand(), newSnapshotCommand(), newEtcdCommand(), newTokenCommand(), newClusterCommand(), newKubeconfigCommand())
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
	// Under systemd (Type=notify), tell it the phases, readiness, the stop
	// and liveness; a plain start has no $NOTIFY_SOCKET and tells no one.
	notifier, err := sdnotify.FromEnvironment()
	if err != nil {
		return err
	}
	if notifier != nil {
		opts.Notifier = notifier
	}
	restoreGC := raiseGCForStartup()
	defer restoreGC()
	return controlplane.Serve(ctx, opts, func(server *controlplane.Server) {
		printReady(out, server, time.Since(processStart))
		restoreGC()
	})
}

// printFlags logs every flag at -v=1, as upstream's cliflag.PrintFlags
// does, but not secrets such as the join token: until it is used or
// expires, it fetches the cluster's keys.
func printFlags(flags *pflag.FlagSet) {
	flags.VisitAll(func(f *pflag.Flag) {
		value := f.Value.String()
		if configfile.Secret(f.Name) && value != "" {
			value = configfile.Redacted
		}
		klog.V(1).Infof("FLAG: --%s=%q", f.Name, value)
	})
}

func printReady(out io.Writer, server *controlplane.Server, took time.Duration) {
	fmt.Fprintf(out, "\nsample-generic-controlplane is ready (%.2fs)\n", took.Seconds())
	fmt.Fprintf(out, "  API server: %s\n", server.URL())
	fmt.Fprintf(out, "  data dir:   %s\n", server.DataDir())
	fmt.Fprintf(out, "\n  export KUBECONFIG=%s\n\n", server.KubeconfigPath())
}

// setGroupHelp gives a command that only groups subcommands a help that
// lists them, rather than the root's, which lists the root's flags (not
// this command's). flags shows the flag the subcommands share.
func setGroupHelp(cmd *cobra.Command, flags string) {
	cmd.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "%s\n\nUsage:\n  %s <command> %s [flags]\n\nCommands:\n", cmd.Long, cmd.CommandPath(), flags)
		width := 0
		for _, sub := range cmd.Commands() {
			width = max(width, len(sub.Name()))
		}
		for _, sub := range cmd.Commands() {
			fmt.Fprintf(out, "  %-*s %s\n", width+1, sub.Name(), sub.Short)
		}
		fmt.Fprintf(out, "\nRun '%s <command> --help' for a command's flags.\n", cmd.CommandPath())
	})
}
