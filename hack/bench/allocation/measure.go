package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// measure creates n claims one at a time, made by newClaim from offset on,
// and returns how long each took from create to a watch event showing its
// record Allocated, when each create was sent, and the prefixes the first
// and the last were given.
func measure(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, n, offset int, newClaim func(int) *networkingv1alpha1.NetworkClaim) ([]time.Duration, []time.Time, [2]string, error) {
	var given [2]string
	w, err := watchFromNow(ctx, claims)
	if err != nil {
		return nil, nil, given, err
	}
	defer w.Stop()
	out := make([]time.Duration, 0, n)
	sentAt := make([]time.Time, 0, n)
	for i := offset; i < offset+n; i++ {
		c := newClaim(i)
		sent := time.Now()
		if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
			return nil, nil, given, err
		}
		seen, err := waitFor(w, c.Name, allocated, time.Minute)
		if err != nil {
			return nil, nil, given, err
		}
		out = append(out, time.Since(sent))
		sentAt = append(sentAt, sent)
		if i == offset {
			given[0] = seen.Status.AddressSpace[0].Prefix
		}
		given[1] = seen.Status.AddressSpace[0].Prefix
	}
	return out, sentAt, given, nil
}

// exactClaim is the i-th measured claim of an exact prefix, a /24 of
// 172.16.0.0/12.
func exactClaim(i int) *networkingv1alpha1.NetworkClaim {
	return claim(fmt.Sprintf("measured-%05d", i), fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256))
}

// pooledClaim is the i-th measured claim of a /24 from the pool.
func pooledClaim(i int) *networkingv1alpha1.NetworkClaim {
	return poolRecordClaim(fmt.Sprintf("measured-pooled-%05d", i))
}

// measurePromotion, n times: a holder is allocated a range, a waiter is
// refused it; then the holder is deleted, and the time until a watch shows
// the waiter Allocated is taken.
func measurePromotion(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, n int) ([]time.Duration, error) {
	w, err := watchFromNow(ctx, claims)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	out := make([]time.Duration, 0, n)
	for i := range n {
		holder, waiter := fmt.Sprintf("holder-%03d", i), fmt.Sprintf("waiter-%03d", i)
		prefix := fmt.Sprintf("192.168.%d.0/24", i)
		if _, err := claims.Create(ctx, claim(holder, prefix), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := waitFor(w, holder, allocated, time.Minute); err != nil {
			return nil, err
		}
		if _, err := claims.Create(ctx, claim(waiter, prefix), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if _, err := waitFor(w, waiter, unavailable, time.Minute); err != nil {
			return nil, err
		}
		sent := time.Now()
		if err := claims.Delete(ctx, holder, metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
		if _, err := waitFor(w, waiter, allocated, time.Minute); err != nil {
			return nil, err
		}
		out = append(out, time.Since(sent))
	}
	return out, nil
}

// createAndWait creates c and waits up to timeout for a watch to show its
// record Allocated; it returns when it saw that.
func createAndWait(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, c *networkingv1alpha1.NetworkClaim, timeout time.Duration) (time.Time, error) {
	w, err := watchFromNow(ctx, claims)
	if err != nil {
		return time.Time{}, err
	}
	defer w.Stop()
	if _, err := claims.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		return time.Time{}, err
	}
	if _, err := waitFor(w, c.Name, allocated, timeout); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// watchFromNow watches the claims from the current resource version.
func watchFromNow(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface) (watch.Interface, error) {
	list, err := claims.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	return claims.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
}

// allocated: the registry decided the claim's current generation and its
// first record holds a prefix.
func allocated(c *networkingv1alpha1.NetworkClaim) bool {
	return networkregistry.Decided(c) && len(c.Status.AddressSpace) > 0 &&
		c.Status.AddressSpace[0].Status == networkingv1alpha1.AllocationAllocated && c.Status.AddressSpace[0].Prefix != ""
}

// unavailable: the registry decided the claim's first record waits.
func unavailable(c *networkingv1alpha1.NetworkClaim) bool {
	return networkregistry.Decided(c) && len(c.Status.AddressSpace) > 0 &&
		c.Status.AddressSpace[0].Status == networkingv1alpha1.AllocationUnavailable
}

// errTimeout: a claim did not reach the state waited for in time.
var errTimeout = errors.New("timed out")

// waitFor waits up to timeout for a watch event showing the claim name in
// the state that ok tells, and returns the claim it showed.
func waitFor(w watch.Interface, name string, ok func(*networkingv1alpha1.NetworkClaim) bool, timeout time.Duration) (*networkingv1alpha1.NetworkClaim, error) {
	deadline := time.After(timeout)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				return nil, errors.New("watch closed")
			}
			if c, isClaim := ev.Object.(*networkingv1alpha1.NetworkClaim); isClaim && c.Name == name && ok(c) {
				return c, nil
			}
		case <-deadline:
			return nil, fmt.Errorf("NetworkClaim %s: %w after %s", name, errTimeout, timeout)
		}
	}
}

// claim claims one exact prefix.
func claim(name, prefix string) *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{Prefix: prefix}}},
	}
}

// poolRecordClaim asks for any free /24 of the pool.
func poolRecordClaim(name string) *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{
			Name:         "pods",
			From:         &networkingv1alpha1.PrefixSource{Claim: poolClaim},
			PrefixLength: ptr.To(int32(poolLength)),
		}}},
	}
}

// delegableClaim is the pool: a delegable prefix others take /24s from.
func delegableClaim() *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: poolClaim},
		Spec: networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{
			Name: "v4", Prefix: poolPrefix, Delegable: true,
		}}},
	}
}
