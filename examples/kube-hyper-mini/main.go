// kube-hyper-mini is a small distribution built on the generic control
// plane library (KEP-4080's "hyper-mini" story): an embedded etcd, a subset
// of the generic APIs, garbage collection and namespace deletion, and one
// controller of its own, registered through a controller descriptor. No
// NetworkClaims: the library knows nothing of them.
//
//	go run ./examples/kube-hyper-mini --data-dir=/tmp/mini --secure-port=7443
//
// It takes every flag of the library (--data-dir, --secure-port,
// --controllers, …) and writes admin.kubeconfig into the data dir.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

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
	opts.DataDir = filepath.Join(filepath.Dir(controlplane.DefaultDataDir()), "kube-hyper-mini")
	opts.Resources = servedResources
	// Only the collector, namespace deletion and ours run by default;
	// --controllers chooses otherwise.
	opts.Controllers.Controllers = []string{names.GarbageCollectorController, names.NamespaceController, welcomeName}
	if err := opts.Controllers.AddControllers(welcomeDescriptor()); err != nil {
		return err
	}

	flushLogs, err := opts.ParseFlags("kube-hyper-mini", args)
	if err != nil {
		return err
	}
	defer flushLogs()
	return controlplane.Serve(ctx, opts, func(server *controlplane.Server) {
		fmt.Printf("kube-hyper-mini is ready at %s\n  export KUBECONFIG=%s\n", server.URL(), server.KubeconfigPath())
	})
}

// servedResources are the generic APIs this distribution serves:
// namespaces, config maps, events, RBAC, leases, and what the API server
// itself relies on: service accounts and secrets (it authenticates service
// accounts' tokens, and the controllers act as service accounts),
// authentication and authorization reviews, flow control.
// CustomResourceDefinitions are served too, by a server of their own.
func servedResources() *serverstorage.ResourceConfig {
	resources := serverstorage.NewResourceConfig()
	core := corev1.SchemeGroupVersion
	resources.EnableResources(core.WithResource("namespaces"), core.WithResource("configmaps"),
		core.WithResource("events"), core.WithResource("serviceaccounts"), core.WithResource("secrets"))
	resources.EnableVersions(rbacv1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion,
		authenticationv1.SchemeGroupVersion, authorizationv1.SchemeGroupVersion, flowcontrolv1.SchemeGroupVersion)
	return resources
}
