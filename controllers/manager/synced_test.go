package manager_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	"sigs.k8s.io/sample-generic-controlplane/controllers/manager"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
)

// Synced marks the end of the controllers' start-up (the server returns
// its garbage to the OS then): it closes once the controllers run and their
// informers have synced, not before.
func TestHealthSyncedOnceControllersStarted(t *testing.T) {
	// No controllers in the server: the ones under test run here.
	s := cptesting.StartTestServer(t, cptesting.Options{Flags: []string{"--controllers="}})
	o := manager.NewOptions()
	o.LeaderElect = false
	o.Controllers = []string{names.ClusterRoleAggregationController}
	h := manager.NewHealth(o)
	select {
	case <-h.Synced():
		t.Fatal("synced before the controllers ran")
	default:
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, o, s.ClientConfig, h) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-h.Synced():
	case err := <-done:
		t.Fatalf("Run returned before the controllers synced: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not synced 30s after the controllers started")
	}
}
