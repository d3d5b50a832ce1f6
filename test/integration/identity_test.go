package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// identityLabel marks the API servers' identity Leases in kube-system.
const identityLabel = "apiserver.kubernetes.io/identity"

// Two replicas on one host and one etcd each have an identity Lease of their
// own, which each renews without conflict: neither deletes nor overwrites
// the other's.
func TestReplicasOnOneHostHaveAnIdentityEach(t *testing.T) {
	log := recordLog(t)
	flags := []string{"--etcd-servers=unix://" + startEtcd(t)}
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: flags})
	cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: flags})

	leases := kubernetes.NewForConfigOrDie(first.ClientConfig).CoordinationV1().Leases("kube-system")
	// The first version of each Lease seen; each must be renewed by the
	// holder that created it.
	seen := map[string]coordinationv1.Lease{}
	var names []string
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 40*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: identityLabel})
		if err != nil {
			return false, err
		}
		names = names[:0]
		renewed := 0
		for _, lease := range list.Items {
			names = append(names, lease.Name)
			was, ok := seen[lease.Name]
			if !ok {
				seen[lease.Name] = lease
				continue
			}
			if lease.UID != was.UID || *lease.Spec.HolderIdentity != *was.Spec.HolderIdentity {
				return false, fmt.Errorf("lease %s was created again or changed hands: holder %s (uid %s), then %s (uid %s)",
					lease.Name, *was.Spec.HolderIdentity, was.UID, *lease.Spec.HolderIdentity, lease.UID)
			}
			if lease.Spec.RenewTime.After(was.Spec.RenewTime.Time) {
				renewed++
			}
		}
		return len(list.Items) == 2 && renewed == 2, nil
	})
	if err != nil {
		t.Fatalf("want two identity leases, each renewed by its holder; have %v: %v", names, err)
	}
	// Each replica deletes a stale Lease of its own at start, and none
	// fails to renew its Lease for a conflict with the other.
	for _, name := range names {
		deleted := 0
		for _, line := range log.lines() {
			switch {
			case !strings.Contains(line, name):
			case strings.Contains(line, "Deleting old lease on startup"):
				deleted++
			case strings.Contains(line, "Failed to update lease"):
				t.Errorf("logged: %s", line)
			}
		}
		if deleted > 1 {
			t.Errorf("lease %s was deleted at start %d times; only its own replica should", name, deleted)
		}
	}
}

// logRecorder holds what klog logged.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

// lines returns what was logged, line by line.
func (r *logRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Split(r.buf.String(), "\n")
}

// recordLog records what klog logs, in the whole process, until the test
// ends: upstream's identity lease controller logs with the global logger,
// not the server's. Errors still reach stderr.
func recordLog(t *testing.T) *logRecorder {
	t.Helper()
	state := klog.CaptureState()
	t.Cleanup(state.Restore)
	r := &logRecorder{}
	klog.SetOutput(r)
	klog.LogToStderr(false)
	return r
}
