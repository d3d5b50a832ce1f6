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
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
)

func main() {
	// --help prints the flags and ends the program; it is no error.
	if err := run(genericapiserver.SetupSignalContext(), os.Args[1:]); err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	opts := controlplane.NewOptions()
	opts.DataDir = filepath.Join(filepath.Dir(controlplane.DefaultDataDir()), "kube-core")
	opts.EmbeddedEtcd = nil // --etcd-servers is required
	opts.Controllers = nil  // no controllers, no controller flags

	flushLogs, err := opts.ParseFlags("kube-core", args)
	if err != nil {
		return err
	}
	defer flushLogs()
	return controlplane.Serve(ctx, opts, func(server *controlplane.Server) {
		fmt.Printf("kube-core is ready at %s\n  export KUBECONFIG=%s\n", server.URL(), server.KubeconfigPath())
	})
}
