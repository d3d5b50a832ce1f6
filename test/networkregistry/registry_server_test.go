// Package networkregistry_test runs client/networkregistry against a real
// control plane. It lives here, not beside the library, so that the
// library's own tests need no k8s.io/kubernetes: a consumer module that
// requires ours resolves with a plain go get.
package networkregistry_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// decisionTimeout bounds each wait for the allocation controller.
const decisionTimeout = 30 * time.Second

var services = v1alpha1.ResourceReference{Group: "", Resource: "services"}

// startRegistry starts a control plane and a Registry on it.
func startRegistry(t *testing.T) (*cptesting.TestServer, *networkregistry.Registry) {
	t.Helper()
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	r, err := networkregistry.NewForConfig(s.ClientConfig, "networkregistry-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, r
}

func claimAndWait(t *testing.T, r *networkregistry.Registry, name string, records ...networkregistry.Record) (*v1alpha1.NetworkClaim, error) {
	t.Helper()
	if _, err := r.Claim(t.Context(), name, records); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), decisionTimeout)
	defer cancel()
	return r.WaitForAllocation(ctx, name)
}

func prefixStrings(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// A component claims ranges, learns the registry's decision, and changes
// its claim; a second component that claims an overlapping range is told
// who holds it.
func TestClaimAndWaitForAllocation(t *testing.T) {
	s, r := startRegistry(t)
	v4, v6 := netip.MustParsePrefix("198.18.0.0/16"), netip.MustParsePrefix("fd00:198:18::/112")

	claim, err := claimAndWait(t, r, "proxy",
		networkregistry.Record{Prefix: v4, Reference: &services, Description: "Service ClusterIPs"},
		networkregistry.Record{Prefix: v6, Reference: &services})
	if err != nil {
		t.Fatalf("WaitForAllocation: %v", err)
	}
	if len(claim.Status.AddressSpace) != 2 || claim.Status.AddressSpace[0].Status != v1alpha1.AllocationAllocated || claim.Status.AddressSpace[1].Status != v1alpha1.AllocationAllocated {
		t.Fatalf("status after WaitForAllocation: %+v", claim.Status)
	}
	if got, want := prefixStrings(r.Prefixes(services)), []string{"198.18.0.0/16", "fd00:198:18::/112"}; !slices.Equal(got, want) {
		t.Errorf("Prefixes(services) = %q, want %q", got, want)
	}
	holders, err := r.WhoHas("198.18.7.1")
	if err != nil {
		t.Fatal(err)
	}
	if len(holders) != 1 || holders[0].Claim != "proxy" || holders[0].Prefix != v4 || holders[0].Description != "Service ClusterIPs" || holders[0].Date.IsZero() {
		t.Errorf("WhoHas(198.18.7.1) = %+v", holders)
	}

	// The claim gives its IPv6 range up: a new generation, decided again.
	claim, err = claimAndWait(t, r, "proxy", networkregistry.Record{Prefix: v4, Reference: &services, Description: "Service ClusterIPs"})
	if err != nil {
		t.Fatalf("WaitForAllocation after the update: %v", err)
	}
	if claim.Generation != 2 || claim.Status.ObservedGeneration != 2 || len(claim.Spec.AddressSpace) != 1 {
		t.Fatalf("after the update: generation %d, status %+v", claim.Generation, claim.Status)
	}
	if got, want := prefixStrings(r.Prefixes(services)), []string{"198.18.0.0/16"}; !slices.Equal(got, want) {
		t.Errorf("Prefixes(services) after the update = %q, want %q", got, want)
	}
	if got, _ := r.WhoHas("fd00:198:18::1"); len(got) != 0 {
		t.Errorf("the released range is still held: %+v", got)
	}

	// Another component overlaps the range.
	pods := v1alpha1.ResourceReference{Resource: "pods"}
	claim, err = claimAndWait(t, r, "cni",
		networkregistry.Record{Prefix: netip.MustParsePrefix("198.18.128.0/17"), Reference: &pods},
		networkregistry.Record{Prefix: netip.MustParsePrefix("198.19.0.0/16"), Reference: &pods})
	var unavailable *networkregistry.UnavailableError
	if !errors.As(err, &unavailable) {
		t.Fatalf("WaitForAllocation of an overlapping claim: %v (%T), want an *UnavailableError", err, err)
	}
	if want := "NetworkClaim cni: 198.18.128.0/17 unavailable: overlaps 198.18.0.0/16 held by NetworkClaim proxy"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if claim == nil || len(unavailable.Records) != 1 || unavailable.Records[0].Prefix != "198.18.128.0/17" {
		t.Errorf("claim %+v, UnavailableError %+v", claim, unavailable)
	}
	// Only what was allocated counts.
	if got := r.Overlaps(netip.MustParsePrefix("198.18.0.0/15")); len(got) != 2 || got[0].Claim != "proxy" || got[1].Claim != "cni" || got[1].Prefix.String() != "198.19.0.0/16" {
		t.Errorf("Overlaps(198.18.0.0/15) = %+v, want proxy's 198.18.0.0/16 and cni's 198.19.0.0/16", got)
	}

	// A claim deleted elsewhere leaves the registry.
	if err := versionedClient(t, s).Delete(t.Context(), "proxy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The registry frees the range for cni, which is then allocated. Only
	// the results show it: poll them, with a deadline.
	var got []networkregistry.Allocation
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, decisionTimeout, true, func(context.Context) (bool, error) {
		got, _ = r.WhoHas("198.18.200.1")
		return len(got) == 1 && got[0].Claim == "cni", nil
	})
	if err != nil {
		t.Fatalf("198.18.200.1 after deleting proxy: held by %+v, want cni (%v)", got, err)
	}
	if got := r.Prefixes(services); len(got) != 0 {
		t.Errorf("Prefixes(services) after deleting the only Service claim = %v", got)
	}
	// The registry saw proxy deleted (cni's allocation came after it): a
	// wait for the claim this Registry wrote says so rather than waiting.
	ctx, cancel := context.WithTimeout(t.Context(), decisionTimeout)
	defer cancel()
	if claim, err := r.WaitForAllocation(ctx, "proxy"); err == nil || err.Error() != "NetworkClaim proxy was deleted while waiting for its allocation" {
		t.Errorf("WaitForAllocation of the deleted claim = %v, %v; want an error saying it was deleted", claim, err)
	}
}

// A tool that claims once and exits: Claim refuses what the server would,
// with the server's error, and WaitForDecision waits for the registry's
// decision without Start (no informer of every claim).
func TestClaimAndWaitForDecision(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	client, err := versioned.NewForConfig(s.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	r := networkregistry.New(client, "claim-tool") // never started
	length := int32(16)
	refused := []struct {
		name    string
		records []networkregistry.Record
		// spec is records as the API's records, to create.
		spec []v1alpha1.AddressSpaceRecord
	}{
		{
			name:    "host bits set",
			records: []networkregistry.Record{{Prefix: netip.MustParsePrefix("198.18.0.1/16")}},
			spec:    []v1alpha1.AddressSpaceRecord{{Prefix: "198.18.0.1/16"}},
		},
		{
			name:    "overlapping records",
			records: []networkregistry.Record{{Prefix: netip.MustParsePrefix("198.18.0.0/15")}, {Prefix: netip.MustParsePrefix("198.18.0.0/16")}},
			spec:    []v1alpha1.AddressSpaceRecord{{Prefix: "198.18.0.0/15"}, {Prefix: "198.18.0.0/16"}},
		},
		{
			name:    "taken from itself, without a name",
			records: []networkregistry.Record{{From: &networkregistry.PrefixSource{Claim: "tool"}, PrefixLength: 16}},
			spec:    []v1alpha1.AddressSpaceRecord{{From: &v1alpha1.PrefixSource{Claim: "tool"}, PrefixLength: &length}},
		},
	}
	for _, tc := range refused {
		_, claimErr := r.Claim(t.Context(), "tool", tc.records)
		_, serverErr := client.NetworkingV1alpha1().NetworkClaims().Create(t.Context(),
			&v1alpha1.NetworkClaim{ObjectMeta: metav1.ObjectMeta{Name: "tool"}, Spec: v1alpha1.NetworkClaimSpec{AddressSpace: tc.spec}}, metav1.CreateOptions{})
		if claimErr == nil || serverErr == nil || !apierrors.IsInvalid(claimErr) || claimErr.Error() != serverErr.Error() {
			t.Errorf("%s: Claim refused with %v, the server with %v; want the server's error", tc.name, claimErr, serverErr)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), decisionTimeout)
	defer cancel()
	applied, err := r.Claim(ctx, "tool", []networkregistry.Record{{Prefix: netip.MustParsePrefix("198.18.0.0/16"), Reference: &services}})
	if err != nil {
		t.Fatal(err)
	}
	claim, err := r.WaitForDecision(ctx, applied)
	if err != nil || claim.Status.ObservedGeneration != applied.Generation || len(networkregistry.AllocationsOf(claim)) != 1 {
		t.Fatalf("WaitForDecision = %+v, %v; want the claim allocated", claim, err)
	}
	applied, err = networkregistry.New(client, "other-tool").Claim(ctx, "other", []networkregistry.Record{{Prefix: netip.MustParsePrefix("198.18.7.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.WaitForDecision(ctx, applied)
	if want := "NetworkClaim other: 198.18.7.0/24 unavailable: overlaps 198.18.0.0/16 held by NetworkClaim tool"; err == nil || err.Error() != want {
		t.Errorf("WaitForDecision of an overlapping claim: %v; want %q", err, want)
	}
}

func versionedClient(t *testing.T, s *cptesting.TestServer) clientv1alpha1.NetworkClaimInterface {
	t.Helper()
	client, err := versioned.NewForConfig(s.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	return client.NetworkingV1alpha1().NetworkClaims()
}

// The examples are the two stories of the KANA proposal; they run against a
// real control plane as their users would run them.
func TestExamples(t *testing.T) {
	s, r := startRegistry(t)
	bin := buildExamples(t, "cni-overlap-check", "service-ranges")

	// Story 2: a service proxy claims its range and prints the Service ranges.
	res := runExample(t, bin["service-ranges"], "--kubeconfig="+s.KubeconfigPath, "--claim=proxy", "--prefix=198.18.0.0/16", "--prefix=fd00:198:18::/112")
	if res.code != 0 || res.stdout != "198.18.0.0/16\nfd00:198:18::/112\n" {
		t.Fatalf("service-ranges --claim: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runExample(t, bin["service-ranges"], "--kubeconfig="+s.KubeconfigPath)
	if res.code != 0 || res.stdout != "198.18.0.0/16\nfd00:198:18::/112\n" {
		t.Fatalf("service-ranges: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runExample(t, bin["service-ranges"], "--kubeconfig="+s.KubeconfigPath, "--claim=other-proxy", "--prefix=198.18.0.0/24")
	if res.code != 1 || !strings.Contains(res.stderr, "198.18.0.0/24 unavailable: overlaps 198.18.0.0/16 held by NetworkClaim proxy") {
		t.Fatalf("service-ranges claiming an overlapping range: exit %d, stderr %q", res.code, res.stderr)
	}

	// Story 1: a CNI plugin checks its pod ranges against the Service ranges.
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "no overlap", args: []string{"--pod-cidr=10.244.0.0/16", "--pod-cidr=fd00:10:244::/56"}, want: []string{"OK: 10.244.0.0/16,fd00:10:244::/56 overlaps no Service range"}},
		{
			name:     "overlaps",
			args:     []string{"--pod-cidr=198.18.128.0/17,10.244.0.0/16", "--pod-cidr=fd00:198::/32"},
			wantCode: 1,
			want: []string{
				"198.18.128.0/17 overlaps Service range 198.18.0.0/16 held by NetworkClaim proxy",
				"fd00:198::/32 overlaps Service range fd00:198:18::/112 held by NetworkClaim proxy",
			},
		},
		{name: "bad range", args: []string{"--pod-cidr=10.244.0.0"}, wantCode: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runExample(t, bin["cni-overlap-check"], append([]string{"--kubeconfig=" + s.KubeconfigPath}, tc.args...)...)
			if res.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", res.code, tc.wantCode, res.stdout, res.stderr)
			}
			if got := strings.Split(strings.TrimSpace(res.stdout), "\n"); tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
	// The test's own Registry learns of the example's claim from its
	// informer, in its own time: poll, with a deadline.
	want := []string{"198.18.0.0/16", "fd00:198:18::/112"}
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, decisionTimeout, true, func(context.Context) (bool, error) {
		got = prefixStrings(r.Prefixes(services))
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Errorf("the test's own registry sees Service ranges %q, want the example's %q (%v)", got, want, err)
	}
}

// buildExamples builds the named examples into a temporary directory.
func buildExamples(t *testing.T, names ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		binary := filepath.Join(dir, name)
		out[name] = binary
		wg.Go(func() {
			cmd := exec.Command("go", "build", "-o", binary, "sigs.k8s.io/sample-generic-controlplane/client/networkregistry/examples/"+name)
			if output, err := cmd.CombinedOutput(); err != nil {
				errs[i] = errors.New(err.Error() + ": " + string(output))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("building the examples: %v", err)
	}
	return out
}

type exampleResult struct {
	stdout, stderr string
	code           int
}

func runExample(t *testing.T, binary string, args ...string) exampleResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*decisionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	// Nothing from the environment: the kubeconfig is the flag's.
	cmd.Env = []string{"HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("%s %q: %v", filepath.Base(binary), args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not finish within %s; stderr %q", filepath.Base(binary), args, 2*decisionTimeout, stderr.String())
	}
	return exampleResult{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}
