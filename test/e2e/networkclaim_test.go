package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const claimManifest = `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata:
  name: e2e-cni
spec:
  addressSpace:
  - reference: {group: "", resource: pods}
    prefix: 10.244.0.0/16
    description: before
`

// NetworkClaims through kubectl: get and wide columns, explain, client and
// server-side apply, edit, and merge and JSON patches.
func TestNetworkClaimWithKubectl(t *testing.T) {
	c := sharedCluster(t)
	deleteLeftovers(t, c, "", "networkclaim/e2e-cni", "networkclaim/e2e-ssa")

	kubectlWithStdin(t, c, claimManifest, "apply", "-f", "-")
	header := strings.Fields(strings.SplitN(kubectl(t, c, "get", "networkclaims", "e2e-cni"), "\n", 2)[0])
	if strings.Join(header, " ") != "NAME PREFIXES ALLOCATED AGE" {
		t.Errorf("kubectl get columns %v, want NAME PREFIXES ALLOCATED AGE", header)
	}
	wide := kubectl(t, c, "get", "nc", "e2e-cni", "-o", "wide")
	if !strings.Contains(wide, "REFERENCES") || !strings.Contains(wide, "pods") || !strings.Contains(wide, "10.244.0.0/16") {
		t.Errorf("kubectl get -o wide:\n%s", wide)
	}
	if explain := kubectl(t, c, "explain", "networkclaim.spec.addressSpace.prefix"); !strings.Contains(explain, "canonical form") {
		t.Errorf("kubectl explain does not document prefix:\n%s", explain)
	}

	// Server-side apply by two managers: each one's record stays. (On an
	// object made by client-side apply, kubectl would first hand the old
	// ownership to the new manager; that migration is kubectl's.)
	ssa := strings.ReplaceAll(claimManifest, "e2e-cni", "e2e-ssa")
	kubectlWithStdin(t, c, ssa, "apply", "--server-side", "--field-manager=ipv4", "-f", "-")
	kubectlWithStdin(t, c, strings.Replace(ssa, "10.244.0.0/16\n    description: before", "fd00:10:244::/56", 1),
		"apply", "--server-side", "--field-manager=ipv6", "-f", "-")
	if got := kubectl(t, c, "get", "nc", "e2e-ssa", "-o", "jsonpath={.spec.addressSpace[*].prefix}"); got != "10.244.0.0/16 fd00:10:244::/56" {
		t.Fatalf("after two server-side appliers the prefixes are %q", got)
	}

	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/description: before/description: edited/' \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	kubectl(t, c, "edit", "networkclaim", "e2e-cni")
	if got := kubectl(t, c, "get", "nc", "e2e-cni", "-o", "jsonpath={.spec.addressSpace[0].description}"); got != "edited" {
		t.Fatalf("after kubectl edit the description is %q", got)
	}

	kubectl(t, c, "patch", "nc", "e2e-cni", "--type=merge", "-p", `{"metadata":{"labels":{"team":"net"}}}`)
	kubectl(t, c, "patch", "nc", "e2e-cni", "--type=json", "-p", `[{"op":"replace","path":"/spec/addressSpace/0/description","value":"patched"}]`)
	if got := kubectl(t, c, "get", "nc", "e2e-cni", "-o", "jsonpath={.metadata.labels.team}/{.spec.addressSpace[0].description}"); got != "net/patched" {
		t.Fatalf("after merge and JSON patches: %q", got)
	}
	res := runKubectl(t, c, "", "patch", "nc", "e2e-cni", "--type=json", "-p", `[{"op":"replace","path":"/spec/addressSpace/0/prefix","value":"10.244.0.1/16"}]`)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "write 10.244.0.0/16") {
		t.Fatalf("a patch to a non-canonical prefix: exit %d, %s", res.ExitCode, res.Stderr)
	}
}
