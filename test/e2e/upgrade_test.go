package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// upgradeFixtures are data dirs written by previous releases, made by
// hack/upgrade-fixture/make.sh (each directory's README.md says from which
// commit). The current binary must start on each with everything intact.
var upgradeFixtures = []string{"v1.36.3"}

// fixtureLeafRenewal is how close to expiry a leaf certificate of the data
// dir is reissued at start (bootstrap.renewBefore), with a day's margin: a
// fixture's leaves are one year old when the fixture is, and reissuing
// them then is correct, not a lost certificate.
const fixtureLeafRenewal = 31 * 24 * time.Hour

// fixtureLists are the kubectl calls hack/upgrade-fixture/make.sh made to
// write expected.json, in its order: the test makes them again.
var fixtureLists = [][]string{
	{"get", "namespace/upgrade", "customresourcedefinition/widgets.example.com", "-o", "json"},
	{"-n", "upgrade", "get", "configmaps,secrets,serviceaccounts,roles,rolebindings,widgets", "-o", "json"},
	{"get", "networkclaims", "-o", "json"},
}

// A data dir written by the previous release starts under this binary with
// everything intact: every object as it was stored (custom resources and
// NetworkClaim decisions with their dates included), the PKI and the admin
// kubeconfig's credentials, service-account tokens issued before; etcd
// repairs nothing, and the controllers carry on from the stored state.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	for _, fixture := range upgradeFixtures {
		t.Run(fixture, func(t *testing.T) {
			testUpgrade(t, filepath.Join("testdata", "upgrade", fixture))
		})
	}
}

func testUpgrade(t *testing.T, fixture string) {
	work := t.TempDir()
	dataDir := filepath.Join(work, "data")
	extractTarGz(t, filepath.Join(fixture, "datadir.tar.gz"), dataDir)
	before := snapshotFiles(t, dataDir, "pki", "admin.kubeconfig")
	// The previous release stored NetworkClaims as JSON (releases before
	// protobuf did): the reads below decode that.
	if db := snapshotFiles(t, dataDir, "etcd/member/snap/db")["etcd/member/snap/db"]; !bytes.Contains(db, []byte(`"kind":"NetworkClaim"`)) {
		t.Fatalf("the fixture's etcd database holds no NetworkClaim stored as JSON")
	}

	c := startCluster(t, Spec{WorkDir: work, DataDir: dataDir, Flags: etcdInfoLogs})
	stderr := readFile(t, c.StderrPath)
	if !strings.Contains(stderr, "restarting local member") {
		t.Errorf("stderr (%s) lacks etcd's %q line: did etcd start a new member instead of the fixture's?", c.StderrPath, "restarting local member")
	}
	if msgs := recoveryMessages(c, stderr); len(msgs) > 0 {
		t.Errorf("etcd repaired or recovered the previous release's data (%s):\n%s", c.StderrPath, strings.Join(msgs, "\n"))
	}
	if lines := embeddedEtcdProblems(stderr); len(lines) > 0 {
		t.Errorf("the embedded etcd warned on the previous release's data (%s):\n%s", c.StderrPath, strings.Join(lines, "\n"))
	}

	t.Run("objects", func(t *testing.T) {
		want := decodeLists(t, readFile(t, filepath.Join(fixture, "expected.json")))
		var got bytes.Buffer
		for _, args := range fixtureLists {
			got.WriteString(kubectl(t, c, args...))
		}
		have := map[string]map[string]any{}
		for _, obj := range decodeLists(t, got.String()) {
			have[objectKey(obj)] = obj
		}
		for _, old := range want {
			key := objectKey(old)
			now, ok := have[key]
			if ok && old["kind"] == "NetworkClaim" {
				old, now = claimDecisions(t, key, old), claimDecisions(t, key, now)
			}
			switch {
			case !ok:
				t.Errorf("%s: stored by the previous release, gone after the upgrade", key)
			case !reflect.DeepEqual(old, now):
				t.Errorf("%s changed in the upgrade:\n%s", key, jsonDiff(old, now))
			}
		}
	})

	t.Run("pki", func(t *testing.T) {
		after := snapshotFiles(t, dataDir, "pki")
		for path, old := range before {
			if path == "admin.kubeconfig" {
				continue
			}
			now, ok := after[path]
			switch {
			case !ok:
				t.Errorf("%s: gone after the upgrade", path)
			case bytes.Equal(old, now):
			case strings.HasSuffix(path, ".crt") && nearExpiry(t, path, old):
				// Reissued at start, as it is on any start that close to
				// expiry; it must still come from the same authority.
			case path == "pki/apiserver.crt" && caAppended(t, old, now, after["pki/ca.crt"]):
				// The same certificate, with the CA after it (for joining
				// servers to pin it), since the release after 1.37.2's.
			default:
				t.Errorf("%s changed in the upgrade", path)
			}
		}
	})

	t.Run("admin kubeconfig", func(t *testing.T) {
		oldCfg, err := clientcmd.Load(before["admin.kubeconfig"])
		if err != nil {
			t.Fatalf("the fixture's admin.kubeconfig: %v", err)
		}
		newCfg, err := clientcmd.LoadFromFile(filepath.Join(dataDir, "admin.kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		oldAuth, newAuth := oldCfg.AuthInfos[oldCfg.Contexts[oldCfg.CurrentContext].AuthInfo], newCfg.AuthInfos[newCfg.Contexts[newCfg.CurrentContext].AuthInfo]
		if !bytes.Equal(oldAuth.ClientCertificateData, newAuth.ClientCertificateData) && !nearExpiry(t, "admin.kubeconfig client certificate", oldAuth.ClientCertificateData) {
			t.Errorf("the admin kubeconfig's client certificate was replaced: copies of the old kubeconfig stop working")
		}
		// A copy of the old kubeconfig, pointed at the new port, is still admin.
		oldCfg.Clusters[oldCfg.Contexts[oldCfg.CurrentContext].Cluster].Server = c.URL
		copyPath := filepath.Join(work, "old-admin.kubeconfig")
		if err := clientcmd.WriteToFile(*oldCfg, copyPath); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(kubectl(t, c, "--kubeconfig="+copyPath, "auth", "can-i", "*", "*")); got != "yes" {
			t.Errorf("with the previous release's admin kubeconfig, kubectl auth can-i '*' '*' printed %q, want yes", got)
		}
	})

	t.Run("service account tokens", func(t *testing.T) {
		legacy := kubectl(t, c, "-n", "upgrade", "get", "secret", "robot-token", "-o", "go-template={{.data.token | base64decode}}")
		for name, token := range map[string]string{
			"TokenRequest token":  strings.TrimSpace(readFile(t, filepath.Join(fixture, "token"))),
			"legacy token Secret": legacy,
		} {
			asRobot := []string{
				"--kubeconfig=/dev/null", "--server=" + c.URL,
				"--certificate-authority=" + filepath.Join(dataDir, "pki", "ca.crt"), "--token=" + token,
			}
			if got := kubectl(t, c, append(asRobot, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")...); got != "system:serviceaccount:upgrade:robot" {
				t.Errorf("the %s issued by the previous release authenticates as %q, want system:serviceaccount:upgrade:robot", name, got)
			}
			// Authorized by the RoleBinding the previous release stored.
			if got := kubectl(t, c, append(asRobot, "-n", "upgrade", "get", "configmap", "settings", "-o", "jsonpath={.data.greeting}")...); got != "written by the previous release" {
				t.Errorf("with the %s: configmap settings has greeting %q", name, got)
			}
		}
	})

	// The controllers carry on from what the previous release stored.
	t.Run("controllers", func(t *testing.T) {
		kubectl(t, c, "-n", "upgrade", "delete", "configmap", "owner")
		kubectl(t, c, "-n", "upgrade", "wait", "--for=delete", "configmap/dependent", "--timeout=30s")

		// The record waiting since before the upgrade is promoted once
		// its holder releases the prefix.
		kubectl(t, c, "delete", "networkclaim", "pod-network")
		kubectl(t, c, "wait", "--for=condition=Ready", "networkclaim/late-cni", "--timeout=30s")
	})

	// Taking space from a pool takes use on it now. The previous release
	// stored the edit aggregation without use; this start adds it, so a
	// user bound to edit still draws from pools, with no new binding.
	t.Run("use of pools", func(t *testing.T) {
		kubectl(t, c, "create", "clusterrolebinding", "upgrade-editor", "--clusterrole=edit", "--user=upgrade-editor")
		kubectlWithStdin(t, c, `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata: {name: upgrade-pool}
spec:
  addressSpace:
  - {prefix: 172.20.0.0/16, delegable: true}
`, "apply", "-f", "-")
		taker := `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata: {name: upgrade-taker}
spec:
  addressSpace:
  - {name: pods, from: {claim: upgrade-pool}, prefixLength: 24}
`
		// Until the binding, and use in edit, take effect: the
		// aggregation controller adds use to edit a moment after the start.
		var last kubectlResult
		if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, specTimeout, true, func(context.Context) (bool, error) {
			last = runKubectl(t, c, taker, "--as=upgrade-editor", "create", "-f", "-")
			return last.ExitCode == 0, nil
		}); err != nil {
			t.Fatalf("a user bound to edit takes from a pool after the upgrade: %v; kubectl's last stderr:\n%s", err, last.Stderr)
		}
		kubectl(t, c, "wait", "--for=condition=Ready", "networkclaim/upgrade-taker", "--timeout=30s")
	})

	// And the upgraded data dir survives a graceful restart unrepaired.
	if err := provider.Restart(t.Context(), c); err != nil {
		t.Fatalf("restart after the upgrade: %v", err)
	}
	if msgs := recoveryMessages(c, readFile(t, c.StderrPath)); len(msgs) > 0 {
		t.Errorf("etcd repaired or recovered the upgraded data on a restart (%s):\n%s", c.StderrPath, strings.Join(msgs, "\n"))
	}
	if got := kubectl(t, c, "-n", "upgrade", "get", "widget", "w1", "-o", "jsonpath={.spec.size}"); got != "3" {
		t.Errorf("after the restart, widget w1 has spec.size %q, want 3", got)
	}

	// The claim written since the upgrade (its record promoted) is stored
	// anew as protobuf, as built-in objects are; the JSON it had read above.
	if err := provider.Stop(t.Context(), c); err != nil {
		t.Fatalf("stop after the upgrade: %v", err)
	}
	if value := storedValue(t, dataDir, "/registry/networkclaims/late-cni"); !bytes.HasPrefix(value, []byte("k8s\x00")) {
		t.Errorf("NetworkClaim late-cni, written after the upgrade, is stored as %q..., want protobuf (k8s\\x00...)", value[:min(len(value), 24)])
	}
}

// storedValue reads key from the embedded etcd of dataDir, whose control
// plane is stopped, by starting its member in the test.
func storedValue(t *testing.T, dataDir, key string) []byte {
	t.Helper()
	// Not under dataDir: its path may exceed the 107 bytes of a unix socket's.
	socketDir, err := os.MkdirTemp("", "upgrade-etcd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(socketDir) //nolint:errcheck // best effort
	etcd, err := embeddedetcd.Start(t.Context(), embeddedetcd.Config{DataDir: filepath.Join(dataDir, "etcd"), SocketPath: filepath.Join(socketDir, "etcd.sock")})
	if err != nil {
		t.Fatalf("starting the data dir's etcd: %v", err)
	}
	defer etcd.Close()
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp, err := etcd.Client().Get(t.Context(), key)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s is not in etcd", key)
	}
	return resp.Kvs[0].Value
}

// embeddedEtcdProblems returns the embedded etcd's warnings and errors in
// log (its zap lines name their component).
func embeddedEtcdProblems(log string) []string {
	var found []string
	for line := range strings.Lines(log) {
		if !strings.Contains(line, `"component": "embedded-etcd"`) {
			continue
		}
		// raft defers its first campaign until the member has applied the
		// configuration change its log ends with; under load the election
		// tick comes first and it says so at warn level. That is timing,
		// not a problem of the data.
		if strings.Contains(line, "cannot campaign at term") && strings.Contains(line, "pending configuration changes to apply") {
			continue
		}
		if fields := strings.Fields(line); len(fields) > 1 && (fields[1] == "warn" || fields[1] == "error") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// nearExpiry reports whether the PEM certificate in data is close enough
// to expiry for the control plane to reissue it at start.
func nearExpiry(t *testing.T, name string, data []byte) bool {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM certificate", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return time.Until(cert.NotAfter) < fixtureLeafRenewal
}

// snapshotFiles reads the regular files under dir's entries (files or
// directories), keyed by their path relative to dir.
func snapshotFiles(t *testing.T, dir string, entries ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, entry := range entries {
		err := filepath.WalkDir(filepath.Join(dir, entry), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			files[rel] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// extractTarGz unpacks the gzipped tar archive at path into dir, keeping
// the modes of its files (etcd and the PKI insist on private ones).
func extractTarGz(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	archive := tar.NewReader(gz)
	for {
		hdr, err := archive.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		target := filepath.Join(dir, hdr.Name)
		if !strings.HasPrefix(target, filepath.Clean(dir)) {
			t.Fatalf("%s: entry %q leaves the directory", path, hdr.Name)
		}
		mode := os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, mode)
		case tar.TypeReg:
			err = writeFrom(target, mode, archive)
		default:
			err = fmt.Errorf("entry %q: unexpected type %c", hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func writeFrom(path string, mode os.FileMode, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close() //nolint:errcheck
		return err
	}
	return out.Close()
}

// decodeLists decodes a stream of JSON Lists (kubectl get -o json, one call
// after the other) into their items.
func decodeLists(t *testing.T, stream string) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stream))
	var items []map[string]any
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return items
		} else if err != nil {
			t.Fatalf("decoding kubectl's JSON: %v", err)
		}
		list, isList := doc["items"].([]any)
		if !isList {
			items = append(items, doc)
			continue
		}
		for _, item := range list {
			items = append(items, item.(map[string]any))
		}
	}
}

// objectKey names an object for messages: apiVersion, kind, namespace/name.
func objectKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s %s", obj["apiVersion"], obj["kind"], name)
}

// jsonDiff shows both objects, indented, for a failure message.
func jsonDiff(old, now any) string {
	a, _ := json.MarshalIndent(old, "", "  ")
	b, _ := json.MarshalIndent(now, "", "  ")
	return fmt.Sprintf("previous release:\n%s\nnow:\n%s", a, b)
}

// claimDecisions is what an upgrade keeps of a NetworkClaim: everything
// but the status fields this release adds (reason, conflictsWith,
// delegatedFrom, firstSeenResourceVersion), which it writes on its first
// decision, and with them the resourceVersion and the Ready message. The
// decisions themselves, their dates and whom a waiting record waits for,
// must not change; a waiting record now names its holder in conflictsWith
// too, which must be the one its message names.
func claimDecisions(t *testing.T, key string, obj map[string]any) map[string]any {
	t.Helper()
	var c map[string]any
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	delete(c["metadata"].(map[string]any), "resourceVersion")
	status, _ := c["status"].(map[string]any)
	records, _ := status["addressSpace"].([]any)
	for _, r := range records {
		record := r.(map[string]any)
		if cw, ok := record["conflictsWith"].(map[string]any); ok {
			if want := fmt.Sprintf("overlaps %s held by NetworkClaim %s", cw["prefix"], cw["claim"]); record["message"] != want {
				t.Errorf("%s: record %v: conflictsWith %v, but the message says %q", key, record["prefix"], cw, record["message"])
			}
		}
		for _, added := range []string{"reason", "conflictsWith", "delegatedFrom", "firstSeenResourceVersion"} {
			delete(record, added)
		}
	}
	conditions, _ := status["conditions"].([]any)
	for _, cond := range conditions {
		delete(cond.(map[string]any), "message")
	}
	return c
}

// caAppended reports whether now is the certificate old, followed by the CA ca.
func caAppended(t *testing.T, old, now, ca []byte) bool {
	t.Helper()
	return bytes.Equal(now, append(slices.Clone(old), ca...))
}
