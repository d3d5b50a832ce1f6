package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// kubectl api-resources lists the generic APIs and nothing of the container domain.
func TestAPIResources(t *testing.T) {
	c := sharedCluster(t)
	served := sets.New(strings.Fields(kubectl(t, c, "api-resources", "-o", "name"))...)
	for _, tc := range []struct {
		resource string
		served   bool
	}{
		{"configmaps", true},
		{"secrets", true},
		{"namespaces", true},
		{"serviceaccounts", true},
		{"events", true},
		{"leases.coordination.k8s.io", true},
		{"customresourcedefinitions.apiextensions.k8s.io", true},
		{"apiservices.apiregistration.k8s.io", true},
		{"clusterroles.rbac.authorization.k8s.io", true},
		{"clustertrustbundles.certificates.k8s.io", true},
		{"storageversionmigrations.storagemigration.k8s.io", true},
		{"servicelocations.controlplane.x-k8s.io", true},
		{"podcertificaterequests.certificates.k8s.io", false},
		{"workloads.scheduling.k8s.io", false},
		{"pods", false},
		{"nodes", false},
		{"services", false},
		{"deployments.apps", false},
		{"jobs.batch", false},
		{"ingresses.networking.k8s.io", false},
		{"storageclasses.storage.k8s.io", false},
	} {
		if got := served.Has(tc.resource); got != tc.served {
			t.Errorf("kubectl api-resources lists %s: %v, want %v", tc.resource, got, tc.served)
		}
	}
	if t.Failed() {
		t.Logf("kubectl api-resources -o name: %v", sets.List(served))
	}
}

// A ConfigMap created by client-side apply is taken over by server-side apply.
func TestApplyThenServerSideApply(t *testing.T) {
	c := sharedCluster(t)
	const name = "e2e-apply"
	deleteLeftovers(t, c, "default", "configmap/"+name)
	manifest := func(color string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  namespace: default
data:
  color: ` + color + `
  size: small
`
	}
	color := func() string {
		return kubectl(t, c, "get", "configmap", name, "-n", "default", "-o", "jsonpath={.data.color}")
	}

	if out := kubectlWithStdin(t, c, manifest("blue"), "apply", "-f", "-"); !strings.Contains(out, "configmap/"+name+" created") {
		t.Errorf("kubectl apply printed %q, want configmap/%s created", out, name)
	}
	if got := color(); got != "blue" {
		t.Fatalf("after kubectl apply: data.color = %q, want blue", got)
	}
	if out := kubectlWithStdin(t, c, manifest("green"), "apply", "--server-side", "-f", "-"); !strings.Contains(out, "configmap/"+name+" serverside-applied") {
		t.Errorf("kubectl apply --server-side printed %q, want configmap/%s serverside-applied", out, name)
	}
	if got := color(); got != "green" {
		t.Fatalf("after kubectl apply --server-side: data.color = %q, want green", got)
	}
	if got := kubectl(t, c, "get", "configmap", name, "-n", "default", "-o", "jsonpath={.data.size}"); got != "small" {
		t.Errorf("after kubectl apply --server-side: data.size = %q, want small (unchanged)", got)
	}
}

// kubectl get -w shows a ConfigMap created after the watch began.
func TestWatchShowsNewConfigMap(t *testing.T) {
	c := sharedCluster(t)
	const timeout = 30 * time.Second
	// The watch starts at the resource version of its initial list, which
	// includes the marker: once the marker is printed, anything created
	// afterwards can only reach the output through the watch.
	deleteLeftovers(t, c, "default", "configmap/e2e-watch-marker", "configmap/e2e-watched")
	kubectl(t, c, "create", "configmap", "e2e-watch-marker", "-n", "default")

	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := kubectlCommand(ctx, c, "get", "configmaps", "-w", "-o", "name", "-n", "default")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a buffer: it is read while kubectl may still write to it.
	stderrPath := filepath.Join(t.TempDir(), "kubectl-watch.stderr")
	stderrFile, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderrFile.Close() //nolint:errcheck
	cmd.Stderr = stderrFile
	stderr := func() string {
		data, _ := os.ReadFile(stderrPath)
		return string(data)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("kubectl get -w: %v", err)
	}
	lines := make(chan string)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			select {
			case lines <- scanner.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel() // kills kubectl, which ends the reader
		<-readerDone
		_ = cmd.Wait() // killed on purpose
	}()

	var seen []string
	waitFor := func(want string) {
		t.Helper()
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl get -w ended before printing %s (printed %q); stderr:\n%s", want, seen, stderr())
				}
				seen = append(seen, line)
				if line == want {
					return
				}
			case <-ctx.Done():
				t.Fatalf("kubectl get -w printed no %s within %s (printed %q); stderr:\n%s", want, timeout, seen, stderr())
			}
		}
	}
	waitFor("configmap/e2e-watch-marker")
	kubectl(t, c, "create", "configmap", "e2e-watched", "-n", "default", "--from-literal=k=v")
	waitFor("configmap/e2e-watched")
}

// The server reports the Kubernetes version it is built from, the one of
// the kubectl built from the same pinned module.
func TestVersion(t *testing.T) {
	c := sharedCluster(t)
	var versions struct {
		ClientVersion, ServerVersion struct{ GitVersion, Minor string }
	}
	if err := json.Unmarshal([]byte(kubectl(t, c, "version", "-o", "json")), &versions); err != nil {
		t.Fatalf("kubectl version -o json: %v", err)
	}
	client, server := versions.ClientVersion, versions.ServerVersion
	if !strings.HasPrefix(server.GitVersion, "v1.") || server.GitVersion != client.GitVersion || server.Minor != client.Minor {
		t.Errorf("server version %s (minor %s), kubectl %s (minor %s): want both the pinned k8s.io/kubernetes version",
			server.GitVersion, server.Minor, client.GitVersion, client.Minor)
	}
}

// /version names the commit the binary is built from and the commit's
// time as its build date (make build and make release stamp them), not
// upstream's placeholders "$Format:%H$" and 1970.
func TestVersionStamp(t *testing.T) {
	c := sharedCluster(t)
	var versions struct{ ServerVersion stamp }
	if err := json.Unmarshal([]byte(kubectl(t, c, "version", "-o", "json")), &versions); err != nil {
		t.Fatalf("kubectl version -o json: %v", err)
	}
	want, err := checkoutVersion()
	if err != nil {
		t.Fatal(err)
	}
	got := versions.ServerVersion
	if got.GitCommit != want.GitCommit || got.BuildDate != want.BuildDate {
		t.Errorf("/version says gitCommit %q, buildDate %q; want this checkout's HEAD %s and its commit time %s (the binary is older than the checkout? make build)",
			got.GitCommit, got.BuildDate, want.GitCommit, want.BuildDate)
	}
	if got.GitTreeState != "clean" && got.GitTreeState != "dirty" {
		t.Errorf("/version says gitTreeState %q, want clean or dirty", got.GitTreeState)
	}
}
