package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// Two replicas on one etcd: one leads and runs the controllers; when it
// stops, the other takes over and its controllers do the work.
func TestOneReplicaLeadsAndTheOtherTakesOver(t *testing.T) {
	socketDir, err := os.MkdirTemp("", "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(socketDir) }) //nolint:errcheck
	socket := filepath.Join(socketDir, "etcd.sock")
	etcd, err := embeddedetcd.Start(embeddedetcd.Config{DataDir: t.TempDir(), SocketPath: socket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close) // after the servers, which are cleaned up first
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}

	flags := []string{"--etcd-servers=unix://" + socket,
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=250ms"}
	first := cptesting.StartTestServer(t, cptesting.Options{Flags: flags})
	leader := waitForLeader(t, first, "")
	second := cptesting.StartTestServer(t, cptesting.Options{Flags: flags})
	// The second replica is up and has been retrying for a while; the
	// first still leads and leadership never changed hands.
	lease, err := kubernetes.NewForConfigOrDie(second.ClientConfig).CoordinationV1().Leases("kube-system").Get(t.Context(), manager.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != leader || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 0 {
		t.Fatalf("while the first replica runs, the lease is %+v; want holder %q and no transitions", lease.Spec, leader)
	}

	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	waitForLeader(t, second, leader)

	// The new leader's controllers work: a dependent is collected.
	c := configMaps(t, second.ClientConfig, "default")
	owner := c.createOwned(t, "ha-owner")
	c.createOwned(t, "ha-dependent", owner)
	if err := c.Delete(t.Context(), "ha-owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "ha-dependent")
}

// waitForLeader waits until the controllers' Lease has a holder other than not.
func waitForLeader(t *testing.T, s *cptesting.TestServer, not string) string {
	t.Helper()
	leases := kubernetes.NewForConfigOrDie(s.ClientConfig).CoordinationV1().Leases("kube-system")
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, manager.LeaseName, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder != "" && holder != not, nil
	})
	if err != nil {
		t.Fatalf("no leader other than %q (holder %q): %v", not, holder, err)
	}
	return holder
}
