// Package controllerslease reads, for the tests, the Lease on which the
// control plane's replicas elect the one that runs the controllers: by the
// name the user guide documents, as a user reads it.
package controllerslease

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Namespace and Name name the controllers' Lease (docs/user-guide.md,
// --leader-elect).
const (
	Namespace = "kube-system"
	Name      = "sample-generic-controlplane-controllers"
)

// Holder returns the holder identity of the controllers' Lease; "" when
// it has none or does not exist.
func Holder(ctx context.Context, cs kubernetes.Interface) (string, error) {
	lease, err := cs.CoordinationV1().Leases(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && lease.Spec.HolderIdentity == nil) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return *lease.Spec.HolderIdentity, nil
}

// WaitForHolder waits up to timeout until the controllers' Lease has a
// holder other than not, and returns it.
func WaitForHolder(t testing.TB, cs kubernetes.Interface, not string, timeout time.Duration) string {
	t.Helper()
	var holder string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		holder, err = Holder(ctx, cs)
		return holder != "" && holder != not, err
	})
	if err != nil {
		t.Fatalf("the controllers' Lease %s/%s has no holder other than %q within %s (holder %q): %v", Namespace, Name, not, timeout, holder, err)
	}
	return holder
}
