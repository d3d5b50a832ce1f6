package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of this binary, of Kubernetes and of etcd it is built from",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			printVersion(cmd.OutOrStdout())
		},
	}
}

func printVersion(w io.Writer) {
	v := controlplane.Versions()
	fmt.Fprintf(w, "sample-generic-controlplane: %s\n", v.ControlPlane)
	fmt.Fprintf(w, "kubernetes: %s\n", v.Kubernetes)
	fmt.Fprintf(w, "etcd: %s\n", v.Etcd)
	fmt.Fprintf(w, "go: %s\n", v.Go)
}
