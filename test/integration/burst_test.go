package integration

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
)

// stopInTheMiddleOfABurst creates n claims on s, claim(0) to claim(n-1),
// from clients clients at once, and stops s once half of them are created,
// while the others are still coming. It returns every claim as listed just
// before the stop, and the allocations the burst's claims had then; it
// fails t if they had none, since nothing would be left to check.
func stopInTheMiddleOfABurst(t *testing.T, s *cptesting.TestServer, n, clients int, claim func(j int) *networkingv1alpha1.NetworkClaim) (before []networkingv1alpha1.NetworkClaim, recorded map[string][]netip.Prefix) {
	t.Helper()
	claims := networkClaims(s.ClientConfig)
	ctx, stopBurst := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() {
		stopBurst()
		wg.Wait()
	}()
	var stopping atomic.Bool
	created := make(chan string, n)
	all := make([]*networkingv1alpha1.NetworkClaim, n)
	burst := sets.New[string]()
	for j := range all {
		all[j] = claim(j)
		burst.Insert(all[j].Name)
	}
	for i := range clients {
		wg.Go(func() {
			for j := i; j < n; j += clients {
				c, err := claims.Create(ctx, all[j], metav1.CreateOptions{})
				if err != nil {
					if !stopping.Load() {
						t.Errorf("creating NetworkClaim %s before the stop: %v", all[j].Name, err)
					}
					return
				}
				created <- c.Name
			}
		})
	}
	go func() { wg.Wait(); close(created) }()
	for i := range n / 2 {
		if _, ok := <-created; !ok {
			t.Fatalf("the burst ended after %d of %d creates", i, n)
		}
	}
	list, err := claims.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopping.Store(true)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	recorded = allocationsOf(t, list.Items)
	for name := range recorded {
		if !burst.Has(name) {
			delete(recorded, name)
		}
	}
	if len(recorded) == 0 {
		t.Fatal("no allocation of the burst was recorded before the stop: the test cannot check they survive it")
	}
	return list.Items, recorded
}

// decidedAfterRestart starts a server on stopped's data dir and returns
// every claim there once decided, with their allocations (allocationsOf
// fails t on overlaps). It fails t for each claim of recorded that does not
// hold what it held before the stop.
func decidedAfterRestart(t *testing.T, stopped *cptesting.TestServer, recorded map[string][]netip.Prefix) (after []networkingv1alpha1.NetworkClaim, now map[string][]netip.Prefix) {
	t.Helper()
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install, DataDir: stopped.DataDir})
	claims := networkClaims(s.ClientConfig)
	list, err := claims.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		after = append(after, *waitDecided(t, claims, c.Name))
	}
	now = allocationsOf(t, after)
	for name, prefixes := range recorded {
		if fmt.Sprint(now[name]) != fmt.Sprint(prefixes) {
			t.Errorf("NetworkClaim %s held %v before the restart and %v after", name, prefixes, now[name])
		}
	}
	return after, now
}
