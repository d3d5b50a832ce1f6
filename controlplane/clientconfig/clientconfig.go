// Package clientconfig finds the control plane a client command talks to,
// as kubectl does. The binary's client commands (token, cluster, and the
// registry's) all load their configuration with it, so that every command
// finds the control plane alike.
package clientconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Load loads the kubeconfig as kubectl does: kubeconfig (the --kubeconfig
// flag) when set, else $KUBECONFIG, else ~/.kube/config (and, inside a pod,
// the pod's service account). Its errors name the flag and what to write.
func Load(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	switch {
	case err == nil:
		return config, nil
	case kubeconfig != "":
		return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	case clientcmd.IsEmptyConfig(err):
		where := ""
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			where = " in " + clientcmd.RecommendedConfigPathEnvVar + "=" + env
		}
		return nil, fmt.Errorf("no kubeconfig%s: set --kubeconfig=FILE or KUBECONFIG, e.g. --kubeconfig=$HOME/.local/share/sample-generic-controlplane/admin.kubeconfig", where)
	default:
		return nil, fmt.Errorf("kubeconfig %s: %w", strings.Join(rules.GetLoadingPrecedence(), string(filepath.ListSeparator)), err)
	}
}
