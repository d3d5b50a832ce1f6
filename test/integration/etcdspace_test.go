package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/maintenance"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// spaceTestQuota is a quota a fresh control plane fits in several times
// over, and that a few dozen large Secrets fill.
const spaceTestQuota = 16 << 20

// TestFullEtcdDatabase fills the embedded etcd's database to its quota and
// checks what a user sees and gets back: writes refused, /readyz failing
// with a check that names the alarm, the size beside the quota in the
// metrics; writes back once objects are deleted, without a restart or
// etcdctl; and, with the alarm raised again, a start with a larger quota.
func TestFullEtcdDatabase(t *testing.T) {
	ctx := t.Context()
	quotaFlag := fmt.Sprintf("--embedded-etcd-quota-bytes=%d", spaceTestQuota)
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: checkSpaceOften, Flags: []string{quotaFlag}})
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)

	filled := fillDatabase(t, client, "fill")

	// Reads are still served; /readyz fails, naming the alarm and what to do.
	if _, err := client.CoreV1().Secrets("default").Get(ctx, filled[0], metav1.GetOptions{}); err != nil {
		t.Fatalf("read while the database is full: %v", err)
	}
	waitForReadyz(t, client, "/readyz/etcd-nospace-alarm", http.StatusInternalServerError, "NOSPACE alarm is raised")
	body := waitForReadyz(t, client, "/readyz", http.StatusInternalServerError, "[-]etcd-nospace-alarm failed")
	if !strings.Contains(body, "[+]etcd ok") {
		t.Errorf("/readyz?verbose blames more than the alarm:\n%s", body)
	}
	check := get(t, client, "/readyz/etcd-nospace-alarm")
	for _, want := range []string{"refuses every write", "reads are still served", "Delete objects", "80% of the quota", "--embedded-etcd-quota-bytes"} {
		if !strings.Contains(check, want) {
			t.Errorf("/readyz/etcd-nospace-alarm does not say %q:\n%s", want, check)
		}
	}
	metrics := gauges(t, client)
	if got := metrics[`sample_generic_controlplane_etcd_alarm{alarm="NOSPACE",member="embedded"}`]; got != 1 {
		t.Errorf("NOSPACE alarm gauge: got %v, want 1", got)
	}
	quota, size := metrics[`sample_generic_controlplane_etcd_db_quota_bytes{member="embedded"}`], metrics[`sample_generic_controlplane_etcd_db_size_bytes{member="embedded"}`]
	if quota != spaceTestQuota || size < 0.8*quota {
		t.Errorf("database size and quota gauges: got %v and %v; want the quota, %d, and a size near it", size, quota, spaceTestQuota)
	}

	// Deleting most of what filled it gives the writes back: the control
	// plane compacts, defragments and disarms on its own.
	for _, name := range filled[:len(filled)*3/4] {
		if err := client.CoreV1().Secrets("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s while the database is full: %v", name, err)
		}
	}
	waitForReadyz(t, client, "/readyz", http.StatusOK, "ok")
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-recovery"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write after the deletions made room: %v", err)
	}
	if _, ok := gauges(t, client)[`sample_generic_controlplane_etcd_alarm{alarm="NOSPACE",member="embedded"}`]; ok {
		t.Error("the NOSPACE alarm is still in the metrics after the recovery")
	}

	// Full again, and stopped: the user guide's advice, a larger quota,
	// must start.
	fillDatabase(t, client, "refill")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	larger := fmt.Sprintf("--embedded-etcd-quota-bytes=%d", 2*spaceTestQuota)
	s = cptesting.StartTestServer(t, cptesting.Options{Customize: checkSpaceOften, DataDir: s.DataDir, Flags: []string{larger}})
	client = kubernetes.NewForConfigOrDie(s.ClientConfig)
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write after a restart with a larger quota: %v", err)
	}
}

// checkSpaceOften is the binary's control plane checking etcd's space 10
// times as often: the test waits for each check.
func checkSpaceOften(o *controlplane.Options) error {
	o.EtcdSpaceCheckInterval = maintenance.DefaultSpaceInterval / 10
	return kana.Install(o)
}

// fillDatabase creates Secrets of 900 KiB in default until etcd refuses
// them for want of space and the control plane cannot make room, and
// returns their names. Each time etcd refuses one, the control plane
// compacts, and may find that the history of what was written held enough
// to defragment and take writes again: then the filling goes on.
func fillDatabase(t *testing.T, client kubernetes.Interface, prefix string) []string {
	t.Helper()
	data := make([]byte, 900<<10)
	var (
		names    []string
		attempts int
	)
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		rand.Read(data) //nolint:errcheck // never fails
		// A name per attempt: a refused create may have been stored.
		name := fmt.Sprintf("%s-%d", prefix, attempts)
		attempts++
		_, err := client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"blob": data},
		}, metav1.CreateOptions{})
		switch {
		case err == nil:
			names = append(names, name)
			return false, nil
		case !strings.Contains(err.Error(), "database space exceeded"):
			return false, fmt.Errorf("create %s: want etcd's database space exceeded, got %w", name, err)
		}
		// Refused. etcd applies the write that takes its database over the
		// quota, then answers it with the error (its quota applier), so
		// that Secret is stored and is deleted with the others.
		if _, err := client.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
			names = append(names, name)
		}
		// Full, once the control plane's check says so.
		var code int
		client.Discovery().RESTClient().Get().AbsPath("/readyz/etcd-nospace-alarm").Do(ctx).StatusCode(&code)
		return code == http.StatusInternalServerError, nil
	})
	if err != nil {
		t.Fatalf("filling etcd's database with Secrets of 900 KiB (%d created, quota %d bytes): %v", len(names), spaceTestQuota, err)
	}
	return names
}

// waitForReadyz polls path (verbose) until it answers code with a body that contains
// want, and returns the body.
func waitForReadyz(t *testing.T, client kubernetes.Interface, path string, code int, want string) string {
	t.Helper()
	var body string
	var got int
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		b, _ := client.Discovery().RESTClient().Get().AbsPath(path).Param("verbose", "true").Do(ctx).StatusCode(&got).Raw()
		body = string(b)
		return got == code && strings.Contains(body, want), nil
	})
	if err != nil {
		t.Fatalf("%s answered %d with %q; want %d with %q", path, got, body, code, want)
	}
	return body
}

func get(t *testing.T, client kubernetes.Interface, path string) string {
	t.Helper()
	b, err := client.Discovery().RESTClient().Get().AbsPath(path).Do(t.Context()).Raw()
	if err != nil && len(b) == 0 {
		t.Fatalf("GET %s: %v", path, err)
	}
	return string(b)
}

// gauges reads /metrics into series → value, e.g.
// `x{a="b"}` → 1.
func gauges(t *testing.T, client kubernetes.Interface) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	for _, line := range strings.Split(get(t, client, "/metrics"), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric %q: %v", line, err)
		}
		values[series] = v
	}
	return values
}
