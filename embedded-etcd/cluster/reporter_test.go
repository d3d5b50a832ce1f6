package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestRunStatusReporter(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, 1)
	m := c.members[0]
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.members.RunStatusReporter(ctx, "https://10.0.0.1:6443", 10*time.Millisecond)
	}()

	leases := c.kube.CoordinationV1().Leases("kube-system")
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := leases.Get(ctx, "etcd-member-member-0", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no status report: %v", err)
	}
	lease, err := leases.Get(ctx, "etcd-member-member-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != "member-0" {
		t.Errorf("holderIdentity %v, want member-0", h)
	}
	if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 40 {
		t.Errorf("leaseDurationSeconds %v, want 40", d)
	}
	if r := lease.Spec.RenewTime; r == nil || !r.Time.Equal(c.clock.Now()) {
		t.Errorf("renewTime %v, want %v", r, c.clock.Now())
	}
	if lease.Labels[LeaseLabel] != "member-0" {
		t.Errorf("labels %v, want %s=member-0", lease.Labels, LeaseLabel)
	}
	a := lease.Annotations
	if size, _ := strconv.Atoi(a["controlplane.x-k8s.io/etcd-db-size"]); size <= 0 {
		t.Errorf("db size annotation %q, want a size", a["controlplane.x-k8s.io/etcd-db-size"])
	}
	if index, _ := strconv.Atoi(a["controlplane.x-k8s.io/etcd-raft-applied-index"]); index <= 0 {
		t.Errorf("applied index annotation %q, want an index", a["controlplane.x-k8s.io/etcd-raft-applied-index"])
	}
	if a["controlplane.x-k8s.io/etcd-leader"] != "true" || a["controlplane.x-k8s.io/apiserver-url"] != "https://10.0.0.1:6443" {
		t.Errorf("annotations %v, want the leader and its API server", a)
	}

	// Renewals advance renewTime and keep acquireTime.
	acquired := lease.Spec.AcquireTime
	c.clock.Step(10 * time.Second)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, "etcd-member-member-0", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.Time.Equal(c.clock.Now()) && l.Spec.AcquireTime.Equal(acquired), nil
	})
	if err != nil {
		t.Errorf("the report was not renewed at the next interval, keeping its acquireTime: %v", err)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunStatusReporter did not return when its context ended")
	}
}
