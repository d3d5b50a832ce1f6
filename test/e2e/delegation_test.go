package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// delegationTimeout bounds each wait for the registry's decision.
const delegationTimeout = 30 * time.Second

// clusterRanges are the three ranges a cluster takes from the org's
// delegable prefixes, as records: a pod /16, a pod IPv6 /48, a service /20.
func clusterRanges(cluster string) []networkregistry.Record {
	pods := &v1alpha1.ResourceReference{Resource: "pods"}
	services := &v1alpha1.ResourceReference{Resource: "services"}
	return []networkregistry.Record{
		{Name: "pods-v4", From: &networkregistry.PrefixSource{Claim: "org-pods"}, PrefixLength: 16, Reference: pods, Description: "pods of " + cluster},
		{Name: "pods-v6", From: &networkregistry.PrefixSource{Claim: "org-pods", Prefix: netip.MustParsePrefix("fd00::/32")}, PrefixLength: 48, Reference: pods, Description: "IPv6 pods of " + cluster},
		{Name: "services", From: &networkregistry.PrefixSource{Claim: "org-services"}, PrefixLength: 20, Reference: services, Description: "Services of " + cluster},
	}
}

// cliArgs are the registry claim flags that take record from its pool.
func cliArgs(record networkregistry.Record) []string {
	args := []string{
		"--from=" + record.From.Claim, fmt.Sprintf("--prefix-length=%d", record.PrefixLength), "--name=" + record.Name,
		"--reference=" + record.Reference.Resource, "--description=" + record.Description,
	}
	if record.From.Prefix.IsValid() {
		args = append(args, "--from-prefix="+record.From.Prefix.String())
	}
	return args
}

// Story 3: one control plane is the registry of several clusters. The org
// delegates its pod and Service space; each cluster takes a pod /16, an
// IPv6 pod /48 and a Service /20 from it, some with the CLI, some with the
// library; no two clusters overlap; a cluster that goes frees its ranges,
// and the next cluster gets them; whois tells, for any address, the
// cluster, what the range is for, and who delegated it.
func TestRegistryDelegatesToClusters(t *testing.T) {
	c := startCluster(t, Spec{})
	kubeconfig := "--kubeconfig=" + c.Kubeconfig
	registryCLI := func(args ...string) commandResult {
		t.Helper()
		res := runBinary(t, append(append([]string{"registry"}, args...), kubeconfig)...)
		if res.ExitCode != 0 {
			t.Fatalf("registry %s: exit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
		}
		return res
	}
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	r, err := networkregistry.NewForConfig(config, "story3-library")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The org delegates its space.
	registryCLI("claim", "org-pods", "10.0.0.0/8", "fd00::/32", "--delegable", "--reference=pods", "--description=pod space of the org")
	registryCLI("claim", "org-services", "172.16.0.0/12", "--delegable", "--reference=services", "--description=Service space of the org")

	// claimWithCLI takes each range with one registry claim run: each
	// pool record is applied on its own, and the runs add up.
	claimWithCLI := func(cluster string, records []networkregistry.Record) {
		t.Helper()
		for _, record := range records {
			registryCLI(append([]string{"claim", cluster}, cliArgs(record)...)...)
		}
	}
	// claimWithLibrary takes the ranges in one Claim and waits for each.
	claimWithLibrary := func(cluster string, records []networkregistry.Record) {
		t.Helper()
		if _, err := r.Claim(t.Context(), cluster, records); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), delegationTimeout)
		defer cancel()
		for _, record := range records {
			if _, err := r.WaitForPrefix(ctx, cluster, record.Name); err != nil {
				t.Fatalf("%s's %s: %v", cluster, record.Name, err)
			}
		}
	}
	claimWithCLI("cluster-a", clusterRanges("cluster-a"))
	claimWithLibrary("cluster-b", clusterRanges("cluster-b"))
	// Both in one claim: the CLI's record and the library's stay apart.
	claimWithCLI("cluster-c", clusterRanges("cluster-c")[:1])
	claimWithLibrary("cluster-c", clusterRanges("cluster-c")[1:])

	// First fit: each cluster gets the lowest free range, in the order
	// they came.
	want := map[string][]string{
		"cluster-a": {"pods-v4 10.0.0.0/16", "pods-v6 fd00::/48", "services 172.16.0.0/20"},
		"cluster-b": {"pods-v4 10.1.0.0/16", "pods-v6 fd00:0:1::/48", "services 172.16.16.0/20"},
		"cluster-c": {"pods-v4 10.2.0.0/16", "pods-v6 fd00:0:2::/48", "services 172.16.32.0/20"},
	}
	checkRanges(t, r, want)
	checkNoOverlap(t, r)

	// cluster-b goes: its ranges are free, and registry release says which.
	res := registryCLI("release", "cluster-b")
	for _, prefix := range []string{"10.1.0.0/16", "fd00:0:1::/48", "172.16.16.0/20"} {
		if !strings.Contains(res.Stdout, prefix) {
			t.Errorf("registry release cluster-b does not name %s:\n%s", prefix, res.Stdout)
		}
	}
	waitUntilFree(t, r, "10.1.0.1")
	if res := registryCLI("whois", "10.1.0.1"); strings.Contains(res.Stdout, "cluster-b") {
		t.Errorf("registry whois 10.1.0.1 after cluster-b's release:\n%s", res.Stdout)
	}

	// The next cluster gets them: the lowest free ranges are cluster-b's.
	claimWithCLI("cluster-d", clusterRanges("cluster-d")[1:2])
	claimWithLibrary("cluster-d", append(clusterRanges("cluster-d")[:1], clusterRanges("cluster-d")[2]))
	delete(want, "cluster-b")
	want["cluster-d"] = []string{"pods-v4 10.1.0.0/16", "pods-v6 fd00:0:1::/48", "services 172.16.16.0/20"}
	checkRanges(t, r, want)
	checkNoOverlap(t, r)

	// whois names the cluster, what the range is for, and the chain of
	// delegation, for an address of each range.
	for cluster, records := range want {
		for i, record := range records {
			_, prefix, _ := strings.Cut(record, " ")
			addr := netip.MustParsePrefix(prefix).Addr().Next()
			spec := clusterRanges(cluster)[i]
			org := spec.From.Claim
			res := registryCLI("whois", addr.String(), "-o", "json")
			var rows []struct {
				Claim, Prefix, Description string
				Reference                  *v1alpha1.ResourceReference
				Chain                      []struct{ Claim, Prefix string }
			}
			if err := json.Unmarshal([]byte(res.Stdout), &rows); err != nil {
				t.Fatalf("registry whois %s -o json: %v\n%s", addr, err, res.Stdout)
			}
			// The org's range, then the cluster's inside it.
			if len(rows) != 2 || rows[0].Claim != org || rows[1].Claim != cluster || rows[1].Prefix != prefix ||
				rows[1].Description != spec.Description || rows[1].Reference == nil || *rows[1].Reference != *spec.Reference ||
				len(rows[1].Chain) != 2 || rows[1].Chain[0].Claim != cluster || rows[1].Chain[1].Claim != org || rows[1].Chain[1].Prefix != rows[0].Prefix {
				t.Errorf("registry whois %s: want %s's %s for %q, delegated by %s:\n%s", addr, cluster, prefix, spec.Description, org, res.Stdout)
			}
			table := registryCLI("whois", addr.String()).Stdout
			if !strings.Contains(table, cluster+" ← "+org) || !strings.Contains(table, spec.Description) {
				t.Errorf("registry whois %s does not show the chain %s ← %s and %q:\n%s", addr, cluster, org, spec.Description, table)
			}
		}
	}
}

// checkRanges checks that each cluster holds exactly the ranges want gives,
// as "name prefix", and that no other cluster holds any.
func checkRanges(t *testing.T, r *networkregistry.Registry, want map[string][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), delegationTimeout)
	defer cancel()
	for cluster, records := range want {
		claim, err := r.WaitForAllocation(ctx, cluster)
		if err != nil {
			t.Fatalf("%s: %v", cluster, err)
		}
		var got []string
		for _, a := range networkregistry.AllocationsOf(claim) {
			got = append(got, a.Name+" "+a.Prefix.String())
		}
		// The records of several field managers merge in an order of
		// server-side apply's choosing.
		slices.Sort(got)
		if !slices.Equal(got, slices.Sorted(slices.Values(records))) {
			t.Errorf("%s holds %q, want %q", cluster, got, records)
		}
	}
	for _, a := range r.Allocations() {
		if _, ok := want[a.Claim]; !ok && strings.HasPrefix(a.Claim, "cluster-") {
			t.Errorf("%s still holds %s", a.Claim, a.Prefix)
		}
	}
}

// checkNoOverlap checks that allocations overlap only along delegation
// chains: a cluster's range lies in the org's that delegated it, and no
// two clusters' ranges share an address.
func checkNoOverlap(t *testing.T, r *networkregistry.Registry) {
	t.Helper()
	allocations := r.Allocations()
	for i, a := range allocations {
		for _, b := range allocations[i+1:] {
			if !a.Prefix.Overlaps(b.Prefix) {
				continue
			}
			if !inChain(r.Chain(a), b) && !inChain(r.Chain(b), a) {
				t.Errorf("%s's %s overlaps %s's %s, and neither was delegated from the other", a.Claim, a.Prefix, b.Claim, b.Prefix)
			}
		}
	}
}

func inChain(chain []networkregistry.Allocation, a networkregistry.Allocation) bool {
	for _, step := range chain {
		if step.Claim == a.Claim && step.Prefix == a.Prefix {
			return true
		}
	}
	return false
}

// waitUntilFree waits until the registry holds addr for no cluster.
func waitUntilFree(t *testing.T, r *networkregistry.Registry, addr string) {
	t.Helper()
	var holders []networkregistry.Allocation
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, delegationTimeout, true, func(context.Context) (bool, error) {
		var err error
		if holders, err = r.WhoHas(addr); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(holders, func(a networkregistry.Allocation) bool { return strings.HasPrefix(a.Claim, "cluster-") }), nil
	})
	if err != nil {
		t.Fatalf("%s is still held after its claim was released: %+v: %v", addr, holders, err)
	}
}
