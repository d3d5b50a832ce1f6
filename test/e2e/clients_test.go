package e2e

import (
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig is the configuration of c's kubeconfig, not throttled on the
// client side (the specs measure the server).
func restConfig(t *testing.T, c *Cluster) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", c.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// clientset is a typed client of c.
func clientset(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(restConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// dynamicClient is a dynamic client of c.
func dynamicClient(t *testing.T, c *Cluster) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(restConfig(t, c))
	if err != nil {
		t.Fatal(err)
	}
	return dc
}
