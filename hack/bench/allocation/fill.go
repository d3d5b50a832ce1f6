package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/informers/externalversions"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
)

// The registry the bench fills: one delegable claim, the pool, and claims
// of two kinds spread evenly among the others.
//
//   - pooled-NNNNNN: a /24 taken from the pool (first fit), so the pool
//     fills from its bottom and a new pool record's first fit lies past
//     every one of them;
//   - present-NNNNNN: an exact IPv6 /64, fd00:0:G:I::/64; every tenth
//     claims its group's /48, fd00:0:G::/48, over /64s of others, so a
//     tenth of them wait on a conflict.
const (
	poolClaim  = "pool-v4"
	poolPrefix = "10.0.0.0/8"
	poolLength = 24
)

// poolCapacity is how many /24s the pool holds.
const poolCapacity = 1 << (poolLength - 8)

// layout says which claims fill the registry: present in all, the pool
// claim included, and pooled of them pool records (none when the allocator
// does not allocate from pools).
type layout struct {
	present, pooled int
}

// claimAt is the i-th claim of the layout (0 <= i < present, not counting
// the pool claim): pool records are spread evenly among exact ones.
func (l layout) claimAt(i int) *networkingv1alpha1.NetworkClaim {
	n := l.others()
	before := func(i int) int { return i * l.pooled / n }
	if before(i+1) > before(i) {
		return poolRecordClaim(fmt.Sprintf("pooled-%06d", i))
	}
	e := i - before(i)
	group, index := uint16(e/256), uint16(e%256)
	prefix := netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 4: byte(group >> 8), byte(group), byte(index >> 8), byte(index)}), 64)
	if e%10 == 9 {
		prefix = netip.PrefixFrom(prefix.Addr(), 48).Masked()
	}
	return claim(fmt.Sprintf("present-%06d", i), prefix.String())
}

// others is how many claims the layout has besides the pool claim.
func (l layout) others() int { return l.present - 1 }

// fill creates the layout's claims (the pool claim already exists)
// with workers in parallel, spread over clients (each its own connection),
// and waits until the registry has decided every one of them.
func fill(ctx context.Context, clients []versioned.Interface, l layout, workers int, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	decided, stop, err := trackDecided(ctx, clients[0])
	if err != nil {
		return err
	}
	defer stop()

	start := time.Now()
	var mu sync.Mutex
	var firstErr error
	var created int
	progress := time.NewTicker(15 * time.Second)
	defer progress.Stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-progress.C:
				mu.Lock()
				c := created
				mu.Unlock()
				fmt.Fprintf(os.Stderr, "  %s: %d created, %d decided\n", time.Since(start).Round(time.Second), c, decided())
			}
		}
	}()
	workqueue.ParallelizeUntil(ctx, workers, l.others(), func(i int) {
		claims := clients[i%len(clients)].NetworkingV1alpha1().NetworkClaims()
		err := create(ctx, claims, l.claimAt(i))
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
			cancel()
		}
		created++
	})
	if firstErr != nil {
		return firstErr
	}
	fmt.Fprintf(os.Stderr, "  created %d claims in %s (%d workers, %d connections)\n",
		l.others(), time.Since(start).Round(time.Millisecond), workers, len(clients))

	want := l.present
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return decided() >= want, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d claims decided after %s: %w", decided(), want, timeout, err)
	}
	return nil
}

// create creates a claim, retrying what a loaded server may answer.
func create(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, c *networkingv1alpha1.NetworkClaim) error {
	transient := func(err error) bool {
		return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
			utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
	}
	err := retry.OnError(retry.DefaultBackoff, transient, func() error {
		_, err := claims.Create(ctx, c, metav1.CreateOptions{})
		return err
	})
	if apierrors.IsAlreadyExists(err) { // a retried create that had gone through
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating NetworkClaim %s: %w", c.Name, err)
	}
	return nil
}

// trackDecided watches every claim through an informer and returns how
// many the registry has decided in full: every spec record has its
// decision in status, for the current generation.
func trackDecided(ctx context.Context, client versioned.Interface) (decided func() int, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithTransform(func(obj any) (any, error) {
			if c, ok := obj.(*networkingv1alpha1.NetworkClaim); ok {
				c.ManagedFields = nil
			}
			return obj, nil
		}))
	informer := factory.Networking().V1alpha1().NetworkClaims().Informer()
	var mu sync.Mutex
	done := map[string]bool{}
	count := 0
	see := func(obj any) {
		c, ok := obj.(*networkingv1alpha1.NetworkClaim)
		if !ok {
			return
		}
		now := networkregistry.Decided(c) && len(c.Status.AddressSpace) == len(c.Spec.AddressSpace)
		mu.Lock()
		defer mu.Unlock()
		if now != done[c.Name] {
			done[c.Name] = now
			if now {
				count++
			} else {
				count--
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		cancel()
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	stop = func() {
		cancel()
		factory.Shutdown()
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return count
	}, stop, nil
}
