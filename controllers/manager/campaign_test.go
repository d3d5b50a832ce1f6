package manager

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func fastElection() *Options {
	o := NewOptions()
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 600*time.Millisecond, 400*time.Millisecond, 50*time.Millisecond
	return o
}

func leaseLock(client *fake.Clientset, id string) *resourcelock.LeaseLock {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: identityNamespace, Name: LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
}

func holder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	lease, err := client.CoordinationV1().Leases(identityNamespace).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// On shutdown the controllers stop first; only then is the lease released,
// so another replica never runs controllers alongside them.
func TestCampaignReleasesLeaseAfterControllersStop(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	holderWhenStopped := make(chan string, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		campaign(ctx, fastElection(), leaseLock(client, "me"), "me", func(runCtx context.Context) error {
			close(started)
			<-runCtx.Done()
			holderWhenStopped <- holder(t, client)
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("campaign did not return after ctx ended")
	}
	if h := <-holderWhenStopped; h != "me" {
		t.Fatalf("when the controllers stopped the lease was held by %q; it must still be ours until they stop", h)
	}
	if h := holder(t, client); h != "" {
		t.Fatalf("lease still held by %q after the campaign ended", h)
	}
}

// A replica that loses the lease stops its controllers and ends the term
// (Run then campaigns again) while its context is still alive.
func TestCampaignEndsTermWhenLeadershipIsLost(t *testing.T) {
	client := fake.NewClientset()
	// The fake clientset ignores resourceVersion, so the leader's next
	// renewal, made from its stale copy of the Lease, would silently take
	// the Lease back. The API server refuses such an update with a
	// conflict; so does this reactor, once "other" holds the Lease.
	client.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		update := action.(k8stesting.UpdateAction)
		lease := update.GetObject().(*coordinationv1.Lease)
		stored, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), update.GetNamespace(), lease.Name)
		if err != nil {
			return false, nil, nil
		}
		if h := stored.(*coordinationv1.Lease).Spec.HolderIdentity; h != nil && *h == "other" &&
			(lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "other") {
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), lease.Name, errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	ctx := t.Context()
	started := make(chan struct{})
	stopped := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		campaign(ctx, fastElection(), leaseLock(client, "me"), "me", func(runCtx context.Context) error {
			close(started)
			<-runCtx.Done()
			close(stopped)
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("never led")
	}
	// Another replica takes the lease, as after a missed renewal.
	lease, err := client.CoordinationV1().Leases(identityNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "other"
	far := metav1.NewMicroTime(time.Now().Add(time.Hour))
	hour := int32(3600)
	lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &other, RenewTime: &far, AcquireTime: &far, LeaseDurationSeconds: &hour}
	if _, err := client.CoordinationV1().Leases(identityNamespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("campaign kept going after losing the lease")
	}
	select {
	case <-stopped:
	default:
		t.Fatal("the term ended before its controllers stopped")
	}
	if ctx.Err() != nil {
		t.Fatal("test context ended; the loss was not what ended the term")
	}
}
