package controlplane

import (
	"context"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/logging"
)

// What a program's main does with the library, in two calls: ParseFlags
// and Serve. The binary adds subcommands with cobra; the examples use these
// as they are.

// ParseFlags parses args as the flags of o (every named set of AddFlags),
// then applies what the flags configure process-wide, as the binary does:
// feature gates and emulation versions, then logging. Call flush before the
// program exits. Add API groups, controllers and admission plugins before.
// With -h or --help it prints the flags and returns pflag.ErrHelp.
func (o *Options) ParseFlags(name string, args []string) (flush func(), err error) {
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := o.ControlPlane.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	return logging.ValidateAndApply(o.ControlPlane.Logs, utilfeature.DefaultFeatureGate)
}

// Serve completes the options, builds the server (NewServer) and runs it
// until ctx is done; ready, if not nil, is called once the server serves.
func Serve(ctx context.Context, o *Options, ready func(*Server)) error {
	completed, err := o.Complete(ctx)
	if err != nil {
		return err
	}
	server, err := NewServer(ctx, completed)
	if err != nil {
		return err
	}
	if ready != nil {
		go func() {
			select {
			case <-server.Ready():
				ready(server)
			case <-ctx.Done():
			}
		}()
	}
	return server.Run(ctx)
}
