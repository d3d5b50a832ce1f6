// Command networkregistry-consumer is what a CNI plugin does with the
// NetworkClaim registry: it claims its pod range, waits for the registry's
// decision, and reads its claim back with the typed clientset.
//
//	networkregistry-consumer --kubeconfig=admin.kubeconfig --pod-cidr=10.244.0.0/16
//
// test/consumers builds it as a module of its own that requires our client
// module and nothing else of ours: no replace block, no k8s.io/kubernetes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// claimName is the NetworkClaim this plugin owns.
const claimName = "example-cni"

// pods is what the claimed ranges are for.
var pods = v1alpha1.ResourceReference{Group: "", Resource: "pods"}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "Kubeconfig of the control plane.")
	podCIDR := flag.String("pod-cidr", "10.244.0.0/16", "The pod range to claim.")
	timeout := flag.Duration("timeout", 30*time.Second, "How long to wait for the registry's decision.")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *kubeconfig, *podCIDR); err != nil {
		fmt.Fprintln(os.Stderr, "networkregistry-consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, podCIDR string) error {
	prefix, err := networkregistry.ParseAddrOrPrefix(podCIDR)
	if err != nil {
		return err
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}

	// Look up before claiming: who already holds addresses of the range?
	registry, err := networkregistry.NewForConfig(config, claimName)
	if err != nil {
		return err
	}
	if err := registry.Start(ctx); err != nil {
		return err
	}
	for _, a := range registry.Overlaps(prefix) {
		fmt.Printf("%s overlaps %s held by NetworkClaim %s\n", prefix, a.Prefix, a.Claim)
	}

	records := []networkregistry.Record{{
		Prefix:      prefix,
		Reference:   &pods,
		Description: "pod network of " + claimName,
	}}
	if _, err := registry.Claim(ctx, claimName, records); err != nil {
		return err
	}
	if _, err := registry.WaitForAllocation(ctx, claimName); err != nil {
		var unavailable *networkregistry.UnavailableError
		if errors.As(err, &unavailable) {
			return fmt.Errorf("choose another --pod-cidr: %w", err)
		}
		return err
	}

	// The typed clientset reads what the registry recorded.
	client, err := versioned.NewForConfig(config)
	if err != nil {
		return err
	}
	claim, err := client.NetworkingV1alpha1().NetworkClaims().Get(ctx, claimName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, s := range claim.Status.AddressSpace {
		fmt.Printf("%s %s since %s\n", s.Prefix, s.Status, s.Date.Format(time.RFC3339))
	}
	// Once WaitForAllocation returned, the registry's queries include the claim.
	fmt.Println("pod ranges of the cluster:", registry.Prefixes(pods))
	return nil
}
