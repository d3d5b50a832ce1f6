package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/pki"
)

// UserKubeconfig returns a kubeconfig that authenticates as user in groups
// with a client certificate valid for validity, issued by the CA of the
// data dir at path, for the server that the data dir's admin kubeconfig
// names. It takes no lock and writes nothing: it is for a control plane
// that runs on the data dir, or ran there.
func UserKubeconfig(path, user string, groups []string, validity time.Duration) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("data dir %q: %w", path, err)
	}
	ca, err := pki.LoadCA(filepath.Join(abs, pkiDirName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data dir %s holds no CA (%s/ca.crt and ca.key): a control plane must have run on this data dir to create one", abs, pkiDirName)
	}
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", abs, err)
	}
	admin := filepath.Join(abs, kubeconfigName)
	config, err := clientcmd.LoadFromFile(admin)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data dir %s holds no %s, which names the server: a control plane writes it when it first serves on this data dir", abs, kubeconfigName)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the server's URL: %w", err)
	}
	context := config.Contexts[config.CurrentContext]
	if context == nil || config.Clusters[context.Cluster] == nil || config.Clusters[context.Cluster].Server == "" {
		return nil, fmt.Errorf("%s: its current context %q names no cluster with a server", admin, config.CurrentContext)
	}
	return pki.UserKubeconfig(config.Clusters[context.Cluster].Server, ca, user, groups, validity)
}
