// sample-generic-controlplane is a Kubernetes-style control plane without the
// container domain: the generic APIs on an embedded etcd, in one process.
package main

import (
	"context"
	"fmt"
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // build info metric
	"k8s.io/klog/v2"

	"sigs.k8s.io/sample-generic-controlplane/cmd/sample-generic-controlplane/app"
)

func main() {
	// The first SIGTERM or SIGINT stops the control plane, within bounds
	// (controlplane.Server.Run); a second one exits at once.
	ctx := genericapiserver.SetupSignalContext()
	context.AfterFunc(ctx, func() {
		klog.Background().Info("Stopping; send SIGTERM or SIGINT again to exit at once")
	})
	if err := app.NewCommand().ExecuteContext(ctx); err != nil {
		klog.Flush()
		// One line a person can act on: no stack, no log decoration.
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
	klog.Flush()
}
