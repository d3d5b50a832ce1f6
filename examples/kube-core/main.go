// kube-core is the API server alone, on an external etcd (KEP-4080's
// "kube-core" story): the generic APIs and CRDs, no embedded etcd and no
// controllers. Pair it with `sample-generic-controlplane controllers`, or
// your own controllers, elsewhere.
//
//	go run ./examples/kube-core --etcd-servers=http://127.0.0.1:2379 --data-dir=/tmp/core
//
// The data dir holds the PKI and admin.kubeconfig.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	"sigs.k8s.io/sample-generic-controlplane/controlplane/logging"
)

func main() {
	if err := run(genericapiserver.SetupSignalContext(), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	opts := controlplane.NewOptions()
	opts.DataDir = filepath.Join(filepath.Dir(controlplane.DefaultDataDir()), "kube-core")
	opts.EmbeddedEtcd = nil // --etcd-servers is required
	opts.Controllers = nil  // no controllers, no controller flags

	var fss cliflag.NamedFlagSets
	opts.AddFlags(&fss)
	fs := pflag.NewFlagSet("kube-core", pflag.ContinueOnError)
	for _, f := range fss.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := opts.ControlPlane.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	flushLogs, err := logging.ValidateAndApply(opts.ControlPlane.Logs, utilfeature.DefaultFeatureGate)
	if err != nil {
		return err
	}
	defer flushLogs()

	completed, err := opts.Complete(ctx)
	if err != nil {
		return err
	}
	server, err := controlplane.NewServer(ctx, completed)
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-server.Ready():
			fmt.Printf("kube-core is ready at %s\n  export KUBECONFIG=%s\n", server.URL(), server.KubeconfigPath())
		case <-ctx.Done():
		}
	}()
	return server.Run(ctx)
}
