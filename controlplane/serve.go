package controlplane

import (
	"context"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/logging"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// The start-up sequence: what the binary, the examples and
// controlplane/testing do with the library, each step in order. A program
// that needs a step of its own between two of them (say, to fetch
// credentials into the data dir before etcd starts) writes Serve out with
// it; docs/embedding.md shows how.

// ParseFlags parses args as the flags of o (every named set of AddFlags),
// then applies what they configure for the whole process
// (ApplyToProcess). Call flush before the program exits. Add API groups,
// controllers and admission plugins before. With -h or --help it prints the
// flags and returns pflag.ErrHelp.
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
	return o.ApplyToProcess(true)
}

// ApplyToProcess applies, once the flags are parsed, what they configure
// for the whole process rather than for one server, in the order it is
// read: feature gates and emulation versions (--feature-gates,
// --emulated-version), which everything after them reads; the metrics flags;
// then, with logs, logging (-v, --logging-format, …), which returns a
// function that flushes the logs before the program exits. A test process
// that keeps its own logging passes false (controlplane/testing).
func (o *Options) ApplyToProcess(logs bool) (flush func(), err error) {
	if err := o.ControlPlane.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	if errs := o.ControlPlane.Metrics.Validate(); len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	applyMetrics(o.ControlPlane.Metrics)
	if !logs {
		return func() {}, nil
	}
	return logging.ValidateAndApply(o.ControlPlane.Logs, utilfeature.DefaultFeatureGate)
}

// Serve starts the control plane of o and runs it until ctx is done, then
// stops it and gives everything back: each step of the library in order,
//
//	Validate → PrepareDataDir → Complete → Validate → Listen → Join →
//	StartEtcd → NewConfig → Complete → New → Run
//
// Every step before Join stays on this machine (the one remote call among
// them, a server that joins a cluster asking it in a dry run for the
// credentials its servers share, changes nothing there), so that a bad
// flag or a port in use fails before the cluster is touched. A start that
// fails after Join, before the server is ready, takes its member back out
// (JoinedMember.Undo); one that is stopped (ctx done) keeps it, to go on
// where it was at the next start. On the way out: Run frees the port when
// it stops, then etcd is closed and the data dir unlocked. ready, if not
// nil, is called once the server serves (its Ready). Apply the flags first
// (ApplyToProcess).
func Serve(ctx context.Context, o *Options, ready func(*Server)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	dataDir, err := o.PrepareDataDir(ctx)
	if err != nil {
		return err
	}
	defer dataDir.Close()
	completed, err := o.Complete(ctx, dataDir)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	listener, err := completed.Listen()
	if err != nil {
		return err
	}
	defer listener.Close()
	joined, err := completed.Join(ctx)
	if err != nil {
		return err
	}
	// undo takes a member this start joined back out when the start
	// fails. A start that was stopped (ctx done) keeps it: started again,
	// the member goes on catching up where it was.
	undo := func(err error, etcd *embeddedetcd.Server) error {
		if ctx.Err() != nil {
			return err
		}
		return joined.Undo(ctx, err, etcd)
	}
	etcd, err := completed.StartEtcd(ctx)
	if err != nil {
		return undo(err, nil)
	}
	if etcd != nil {
		defer etcd.Close()
	}
	config, err := NewConfig(ctx, completed, etcd)
	if err != nil {
		return undo(err, etcd)
	}
	completedConfig, err := config.Complete()
	if err != nil {
		return undo(err, etcd)
	}
	server, err := completedConfig.New()
	if err != nil {
		return undo(err, etcd)
	}
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		select {
		case <-server.Ready():
			// Ready, then stopped at once: say nothing.
			select {
			case <-server.Stopped():
			default:
				if ready != nil {
					ready(server)
				}
			}
		case <-server.Stopped():
		}
	}()
	err = server.Run(ctx)
	<-readyDone
	select {
	case <-server.Ready():
		return err
	default:
		// Stopped before it was ready.
	}
	if err != nil {
		return undo(err, etcd)
	}
	return nil
}
