package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"

	"sigs.k8s.io/sample-generic-controlplane/controllers/controller"
	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
)

// newControllersCommand runs only the controllers, against a control plane
// elsewhere, as kube-controller-manager would (hyperkube-style): the generic
// ones and added, those the composition adds (root.go: KANA's).
func newControllersCommand(added ...controller.Descriptor) *cobra.Command {
	opts := manager.NewOptions()
	// Fails only on a programming error (a name taken twice).
	utilruntime.Must(opts.AddControllers(added...))
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "controllers --kubeconfig=FILE",
		Short: "Run only the controllers, against the control plane in --kubeconfig",
		Long: `Runs the controllers that the all-in-one control plane runs in-process, against the API
server in --kubeconfig. Its user should be system:kube-controller-manager (or an admin): it
runs the shared informers and obtains each controller's service-account credentials.
Replicas elect a leader on the Lease kube-system/` + manager.LeaseName + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required; write e.g. --kubeconfig=$HOME/.local/share/sample-generic-controlplane/admin.kubeconfig")
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			// The CA becomes the default root CA to publish, so read a
			// certificate-authority file into CAData.
			if err := rest.LoadTLSFiles(config); err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			// kube-controller-manager's defaults (--kube-api-qps,
			// --kube-api-burst, --kube-api-content-type): protobuf, which
			// every group of ours and upstream's is served in; JSON accepted
			// for custom resources.
			config.QPS, config.Burst = 50, 100
			config.ContentType = runtime.ContentTypeProtobuf
			config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
			return manager.Run(cmd.Context(), opts, config, nil)
		},
	}
	var fss cliflag.NamedFlagSets
	fss.FlagSet("connection").StringVar(&kubeconfig, "kubeconfig", kubeconfig, "Kubeconfig of the control plane to run the controllers against.")
	addConfigFlag(fss.FlagSet("connection"))
	opts.AddFlags(fss.FlagSet("controllers"))
	for _, fs := range fss.FlagSets {
		cmd.Flags().AddFlagSet(fs)
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
	return cmd
}
