package testing

import (
	"testing"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
)

// TestNoNamespaceDeletionGracePeriod checks that the test server empties
// a deleted namespace at once: its API server is alone on its etcd, and a
// test that waits for a namespace to go would otherwise wait 5 s.
func TestNoNamespaceDeletionGracePeriod(t *testing.T) {
	var seen *controlplane.Options
	StartTestServer(t, Options{Customize: func(o *controlplane.Options) error {
		seen = o
		return nil
	}})
	if got := seen.Controllers.NamespaceDeletionGracePeriod; got != 0 {
		t.Errorf("namespace deletion grace period = %s, want 0", got)
	}
}
