package integration

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/controllers/allocation"
	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
	"sigs.k8s.io/sample-generic-controlplane/test/internal/controllerslease"
)

// Two replicas on one etcd: one leads and runs the controllers; when it
// stops, the other takes over and its controllers do the work.
func TestOneReplicaLeadsAndTheOtherTakesOver(t *testing.T) {
	const retryPeriod = 250 * time.Millisecond
	// The documented name, which the e2e suite reads, is the manager's.
	if controllerslease.Namespace != "kube-system" || controllerslease.Name != manager.LeaseName {
		t.Fatalf("the controllers' Lease is documented as %s/%s, but the manager takes kube-system/%s", controllerslease.Namespace, controllerslease.Name, manager.LeaseName)
	}
	flags := []string{"--etcd-servers=unix://" + startEtcd(t),
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=" + retryPeriod.String()}
	first := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: flags})
	leader := controllerslease.WaitForHolder(t, kubernetes.NewForConfigOrDie(first.ClientConfig), "", wait.ForeverTestTimeout)
	second := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, Flags: flags})
	secondClient := kubernetes.NewForConfigOrDie(second.ClientConfig)
	// The second replica is up; while it tries to acquire the lease, four
	// times over, the first still leads and leadership never changes hands.
	leases := secondClient.CoordinationV1().Leases(controllerslease.Namespace)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 4*retryPeriod, true, func(context.Context) (bool, error) {
		lease, err := leases.Get(t.Context(), controllerslease.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != leader || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != 0 {
			return false, fmt.Errorf("while the first replica runs, the lease is %+v; want holder %q and no transitions", lease.Spec, leader)
		}
		return false, nil // keep watching until the time is up
	})
	if !wait.Interrupted(err) || t.Context().Err() != nil {
		t.Fatal(err)
	}

	// Claims race for one range through both replicas: only the leader
	// allocates, so exactly one wins.
	const racers = 20
	var wg sync.WaitGroup
	for i := range racers {
		server := []*cptesting.TestServer{first, second}[i%2]
		wg.Go(func() {
			if _, err := networkClaims(server.ClientConfig).Create(t.Context(), newClaim(fmt.Sprintf("ha-%02d", i), "10.96.0.0/12"), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	claims := networkClaims(second.ClientConfig)
	var decidedClaims []networkingv1alpha1.NetworkClaim
	winner := ""
	for i := range racers {
		c := waitDecided(t, claims, fmt.Sprintf("ha-%02d", i))
		decidedClaims = append(decidedClaims, *c)
		if c.Status.AddressSpace[0].Status == networkingv1alpha1.AllocationAllocated {
			winner = c.Name
		}
	}
	if held := allocationsOf(t, decidedClaims); len(held) != 1 {
		t.Fatalf("claims holding 10.96.0.0/12: %v; want exactly one", held)
	}
	// Every decision was the leader's: events name the replica.
	for i := range racers {
		for _, e := range eventsFor(t, second.ClientConfig, fmt.Sprintf("ha-%02d", i)) {
			if e.Source.Component == allocation.Identity && e.Source.Host != leader {
				t.Errorf("event %s %q on %s came from replica %q, not the leader %q", e.Reason, e.Message, e.InvolvedObject.Name, e.Source.Host, leader)
			}
		}
	}

	// Pool records race through both replicas for a pool with room for
	// two /31s: two get one each, the others wait for room.
	if _, err := claims.Create(t.Context(), claimOf("ha-pool", networkingv1alpha1.AddressSpaceRecord{Prefix: "10.200.0.0/30", Delegable: true}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDecided(t, claims, "ha-pool")
	for i := range 6 {
		server := []*cptesting.TestServer{first, second}[i%2]
		wg.Go(func() {
			if _, err := networkClaims(server.ClientConfig).Create(t.Context(), claimOf(fmt.Sprintf("ha-pool-%d", i), poolRecord("net", "ha-pool", 31)), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	poolHolders := func() map[string][]netip.Prefix {
		var decided []networkingv1alpha1.NetworkClaim
		for i := range 6 {
			decided = append(decided, *waitDecided(t, claims, fmt.Sprintf("ha-pool-%d", i)))
		}
		return allocationsOf(t, decided)
	}
	held := poolHolders()
	if len(held) != 2 {
		t.Fatalf("pool records allocated: %v; want two /31s", held)
	}

	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	newLeader := controllerslease.WaitForHolder(t, secondClient, leader, wait.ForeverTestTimeout)

	// The new leader keeps both and gives a freed /31 to a waiter.
	var gone string
	for name := range held {
		gone = name
	}
	if err := claims.Delete(t.Context(), gone, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for name := range allocationsOf(t, list.Items) {
			if strings.HasPrefix(name, "ha-pool-") {
				n++
			}
		}
		return n == 2, nil
	})
	if err != nil {
		t.Fatalf("after %s let go of its /31, no waiter got it from the new leader: %v", gone, err)
	}

	// The new leader rebuilt the ledger: the winner keeps the range until
	// it lets go, and then the first of the others gets it.
	if err := claims.Delete(t.Context(), winner, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(haHolders(allocationsOf(t, list.Items))) == 1, nil
	})
	if err != nil {
		t.Fatalf("after the winner %s let go, nobody got 10.96.0.0/12 from the new leader: %v", winner, err)
	}
	list, err := claims.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name := range haHolders(allocationsOf(t, list.Items)) {
		// Events are recorded in the background, after the status write
		// the poll above saw: wait for it.
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			for _, e := range eventsFor(t, second.ClientConfig, name) {
				if e.Reason == allocation.EventAllocated && e.Source.Host == newLeader {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Errorf("no Allocated event on %s from the new leader %q: %v", name, newLeader, err)
		}
	}

	// The new leader's controllers work: a dependent is collected.
	c := configMaps(t, second.ClientConfig, "default")
	owner := c.createOwned(t, "ha-owner")
	c.createOwned(t, "ha-dependent", owner)
	if err := c.Delete(t.Context(), "ha-owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "ha-dependent")
}

// haHolders keeps the holders of 10.96.0.0/12, the ha-NN claims.
func haHolders(held map[string][]netip.Prefix) map[string][]netip.Prefix {
	out := map[string][]netip.Prefix{}
	for name, prefixes := range held {
		if strings.HasPrefix(name, "ha-") && !strings.HasPrefix(name, "ha-pool") {
			out[name] = prefixes
		}
	}
	return out
}
