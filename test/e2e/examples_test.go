package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
)

// The example distributions under examples/ are built on the library
// alone, as a program outside this repository would be; these tests build
// them and run them as their doc comments say.

// exampleBuilds builds each example once per test process.
var exampleBuilds sync.Map // name → func() (string, error)

// buildExample builds examples/<name> and returns the binary's path.
func buildExample(t *testing.T, name string) string {
	t.Helper()
	build, _ := exampleBuilds.LoadOrStore(name, sync.OnceValues(func() (string, error) {
		ldflags, err := kubeVersionLDFlags()
		if err != nil {
			return "", err
		}
		out := filepath.Join(exampleBinDir, name)
		pkg := "sigs.k8s.io/sample-generic-controlplane/examples/" + name
		if output, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
		}
		return out, nil
	}))
	binary, err := build.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return binary
}

// kube-hyper-mini serves only the resources it chose, collects garbage,
// deletes namespaces, and runs its own controller under the manager, with
// a health check and a role of its own, exactly as the generic ones run.
func TestKubeHyperMini(t *testing.T) {
	p := &binaryProvider{binary: buildExample(t, "kube-hyper-mini"), startTimeout: readyTimeout}
	c := startClusterWith(t, p, Spec{})
	if want := filepath.Join(c.DataDir, "admin.kubeconfig"); c.Kubeconfig != want {
		t.Errorf("kubeconfig at %s, want %s (in --data-dir, like the binary)", c.Kubeconfig, want)
	}

	resources := sets.New(strings.Fields(kubectl(t, c, "api-resources", "-o", "name"))...)
	for _, want := range []string{"namespaces", "configmaps", "serviceaccounts", "secrets", "events", "leases.coordination.k8s.io",
		"clusterroles.rbac.authorization.k8s.io", "customresourcedefinitions.apiextensions.k8s.io"} {
		if !resources.Has(want) {
			t.Errorf("kube-hyper-mini does not serve %s", want)
		}
	}
	for _, unwanted := range []string{"resourcequotas", "certificatesigningrequests.certificates.k8s.io",
		"validatingadmissionpolicies.admissionregistration.k8s.io", "networkclaims.networking.x-k8s.io"} {
		if resources.Has(unwanted) {
			t.Errorf("kube-hyper-mini serves %s, which it left out", unwanted)
		}
	}

	// Its own controller writes a welcome into each new namespace, acting
	// as its service account with the role its descriptor declares.
	kubectl(t, c, "create", "namespace", "mini")
	kubectl(t, c, "wait", "--for=create", "configmap/welcome", "-n", "mini", "--timeout=30s")
	if got := kubectl(t, c, "auth", "can-i", "create", "configmaps", "--as=system:serviceaccount:kube-system:welcome-controller"); strings.TrimSpace(got) != "yes" {
		t.Errorf("the welcome controller's service account may not create configmaps: %s", got)
	}
	for _, check := range []string{"controller-welcome", "controller-garbagecollector", "controller-namespace"} {
		kubectl(t, c, "get", "--raw", "/livez/"+check)
	}
	if out := runKubectl(t, c, "", "get", "--raw", "/livez/controller-serviceaccount"); out.ExitCode == 0 {
		t.Error("/livez/controller-serviceaccount answers, but kube-hyper-mini runs only the collector, namespace deletion and its own controller")
	}

	// Garbage collection: the dependent goes with its owner.
	uid := strings.TrimSpace(kubectl(t, c, "create", "configmap", "owner", "-n", "mini", "-o", "jsonpath={.metadata.uid}"))
	kubectlWithStdin(t, c, fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dependent","namespace":"mini",
		"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q}]}}`, uid), "create", "-f", "-")
	kubectl(t, c, "delete", "configmap", "owner", "-n", "mini")
	kubectl(t, c, "wait", "--for=delete", "configmap/dependent", "-n", "mini", "--timeout=30s")

	// Namespace deletion empties the namespace, then removes it.
	kubectl(t, c, "delete", "namespace", "mini", "--wait=false")
	kubectl(t, c, "wait", "--for=delete", "namespace/mini", "--timeout=60s")
}

// kube-core is the API server alone on an external etcd: it serves the
// generic APIs and runs no controllers.
func TestKubeCore(t *testing.T) {
	etcd := startEtcdCluster(t, 1)
	p := &binaryProvider{binary: buildExample(t, "kube-core"), startTimeout: readyTimeout}
	c := startClusterWith(t, p, Spec{Flags: etcdFlags(etcd[0])})

	kubectl(t, c, "create", "namespace", "core")
	kubectl(t, c, "create", "configmap", "stored", "-n", "core")
	if got := kubectl(t, c, "get", "configmap", "stored", "-n", "core", "-o", "name"); strings.TrimSpace(got) != "configmap/stored" {
		t.Errorf("get configmap: %q", got)
	}
	livez := kubectl(t, c, "get", "--raw", "/livez?verbose")
	if strings.Contains(livez, "controller-") {
		t.Errorf("kube-core reports controllers it does not run:\n%s", livez)
	}
	// Neither controllers nor an embedded etcd: none of their flags.
	help := runCommand(t, func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, p.binary, "--help") }, "")
	for _, flag := range []string{"--controllers", "--embedded-etcd-quota-bytes"} {
		if strings.Contains(help.Stdout+help.Stderr, flag) {
			t.Errorf("kube-core --help offers %s", flag)
		}
	}
	if !strings.Contains(help.Stdout+help.Stderr, "--etcd-servers") {
		t.Errorf("kube-core --help does not offer --etcd-servers:\n%s", help.Stderr)
	}
}

// kube-core refuses to start without an etcd to store in.
func TestKubeCoreNeedsEtcdServers(t *testing.T) {
	p := &binaryProvider{binary: buildExample(t, "kube-core"), startTimeout: readyTimeout}
	c, err := p.Start(t.Context(), Spec{WorkDir: t.TempDir()})
	var exitErr *ExitError
	if !errors.As(err, &exitErr) {
		if err == nil {
			p.Kill(c)
		}
		t.Fatalf("kube-core without --etcd-servers: %v, want it to exit with an error", err)
	}
	if line := exitErr.LastStderrLine(); !strings.Contains(line, "--etcd-servers is required") {
		t.Errorf("last line of stderr %q, want it to say --etcd-servers is required", line)
	}
}
