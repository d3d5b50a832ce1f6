// Command cni-overlap-check is what a CNI plugin does before it hands out pod
// addresses: it checks that the pod ranges it is configured with overlap no
// range the NetworkClaim registry allocated to Services.
//
//	cni-overlap-check --kubeconfig=admin.kubeconfig --pod-cidr=10.244.0.0/16,fd00:10:244::/56
//
// It prints OK, or every overlap with the claim that holds the Service
// range, and exits 1 on an overlap; 2 when it cannot check.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// prefixes is a repeatable flag of comma-separated prefixes.
type prefixes []netip.Prefix

func (p *prefixes) String() string {
	var s []string
	for _, q := range *p {
		s = append(s, q.String())
	}
	return strings.Join(s, ",")
}

func (p *prefixes) Set(value string) error {
	for _, s := range strings.Split(value, ",") {
		q, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q: write a CIDR such as 10.244.0.0/16", s)
		}
		*p = append(*p, q.Masked())
	}
	return nil
}

func main() {
	var podCIDRs prefixes
	kubeconfig := flag.String("kubeconfig", "", "Kubeconfig of the control plane; default: $KUBECONFIG or ~/.kube/config.")
	timeout := flag.Duration("timeout", 30*time.Second, "How long to wait for the registry's NetworkClaims.")
	flag.Var(&podCIDRs, "pod-cidr", "A pod range to check, e.g. 10.244.0.0/16; repeat the flag or separate ranges with commas.")
	flag.Parse()
	if len(podCIDRs) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "cni-overlap-check: write at least one --pod-cidr, e.g. --pod-cidr=10.244.0.0/16, and no arguments")
		os.Exit(2)
	}

	overlaps, err := check(*kubeconfig, *timeout, podCIDRs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cni-overlap-check: %v\n", err)
		os.Exit(2)
	}
	if len(overlaps) == 0 {
		fmt.Printf("OK: %s overlaps no Service range\n", podCIDRs.String())
		return
	}
	for _, o := range overlaps {
		fmt.Println(o)
	}
	os.Exit(1)
}

// check returns one line per overlap of a pod range with a Service range.
func check(kubeconfig string, timeout time.Duration, podCIDRs []netip.Prefix) ([]string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	// Only looks up: no field manager.
	registry, err := networkregistry.NewForConfig(config, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := registry.Start(ctx); err != nil {
		return nil, err
	}

	services := v1alpha1.ResourceReference{Group: "", Resource: "services"}
	var out []string
	for _, pod := range podCIDRs {
		for _, a := range registry.Overlaps(pod) {
			if a.Reference == nil || *a.Reference != services {
				continue
			}
			out = append(out, fmt.Sprintf("%s overlaps Service range %s held by NetworkClaim %s", pod, a.Prefix, a.Claim))
		}
	}
	return out, nil
}
