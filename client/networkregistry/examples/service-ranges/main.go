// Command service-ranges is what a service proxy does at start: it looks up
// the ranges the NetworkClaim registry allocated for Services (group "",
// resource "services") and prints them, one per line.
//
//	service-ranges --kubeconfig=admin.kubeconfig
//
// With --claim and --prefix it first claims ranges for Services under that
// NetworkClaim and waits for the registry's decision; it exits 1 when a
// range is unavailable, saying who holds it:
//
//	service-ranges --kubeconfig=admin.kubeconfig --claim=my-proxy --prefix=10.96.0.0/12
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// fieldManager names this program in the managed fields of its claims.
const fieldManager = "service-ranges-example"

var services = v1alpha1.ResourceReference{Group: "", Resource: "services"}

// prefixes is a repeatable flag.
type prefixes []netip.Prefix

func (p *prefixes) String() string { return fmt.Sprint([]netip.Prefix(*p)) }

func (p *prefixes) Set(value string) error {
	q, err := netip.ParsePrefix(value)
	if err != nil {
		return fmt.Errorf("%q: write a CIDR such as 10.96.0.0/12", value)
	}
	*p = append(*p, q)
	return nil
}

func main() {
	var claimed prefixes
	kubeconfig := flag.String("kubeconfig", "", "Kubeconfig of the control plane; default: $KUBECONFIG or ~/.kube/config.")
	claim := flag.String("claim", "", "Claim --prefix for Services under this NetworkClaim name first.")
	flag.Var(&claimed, "prefix", "A Service range to claim with --claim, e.g. 10.96.0.0/12; repeatable.")
	timeout := flag.Duration("timeout", 30*time.Second, "How long to wait for the registry.")
	flag.Parse()
	if (*claim == "") != (len(claimed) == 0) || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "service-ranges: write --claim and --prefix together, e.g. --claim=my-proxy --prefix=10.96.0.0/12, or neither")
		os.Exit(2)
	}
	ranges, err := run(*kubeconfig, *timeout, *claim, claimed)
	if err != nil {
		fmt.Fprintf(os.Stderr, "service-ranges: %v\n", err)
		var unavailable *networkregistry.UnavailableError
		if errors.As(err, &unavailable) {
			os.Exit(1)
		}
		os.Exit(2)
	}
	for _, p := range ranges {
		fmt.Println(p)
	}
}

func run(kubeconfig string, timeout time.Duration, claim string, claimed []netip.Prefix) ([]netip.Prefix, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	registry, err := networkregistry.NewForConfig(config, fieldManager)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := registry.Start(ctx); err != nil {
		return nil, err
	}
	if claim != "" {
		var records []networkregistry.Record
		for _, p := range claimed {
			records = append(records, networkregistry.Record{Prefix: p, Reference: &services, Description: "Service ClusterIP range"})
		}
		if _, err := registry.Claim(ctx, claim, records); err != nil {
			return nil, err
		}
		if _, err := registry.WaitForAllocation(ctx, claim); err != nil {
			return nil, err
		}
	}
	return registry.Prefixes(services), nil
}
