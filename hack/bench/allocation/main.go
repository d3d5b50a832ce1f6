// Command allocation measures NetworkClaim latency on the all-in-one binary
// with its defaults, with -present claims already in the registry (a tenth
// of them waiting on a conflict):
//   - create-to-Allocated: from sending a create to a watch delivering the
//     claim's status with its record Allocated;
//   - release-to-promotion: from deleting a holder to a watch showing the
//     claim that waited for its range Allocated;
//   - after a restart, how long until the first new claim is allocated.
//
// One operation at a time, so the figures are the registry's latency, not a
// queue's.
//
//	go run ./hack/bench/allocation -binary bin/sample-generic-controlplane
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	networkingv1alpha1 "sigs.k8s.io/sample-generic-controlplane/apis/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned"
	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/client/networkregistry"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	present := flag.Int("present", 10_000, "claims in the registry before measuring")
	samples := flag.Int("samples", 500, "claims created, one at a time, to measure")
	keep := flag.Bool("keep", false, "keep the data dir and the control plane's logs, and print where")
	flag.Parse()
	if err := run(*binary, *present, *samples, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(binary string, present, samples int, keep bool) error {
	dir, err := os.MkdirTemp("", "bench-allocation-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(os.Stderr, "data dir and logs kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir) //nolint:errcheck
	}
	port, err := benchutil.FreePort()
	if err != nil {
		return err
	}
	args := []string{"--data-dir=" + filepath.Join(dir, "data"), "--secure-port=" + strconv.Itoa(port)}
	cp, err := benchutil.Start(binary, args, filepath.Join(dir, "controlplane.log"))
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	if err := benchutil.WaitReady(port, cp, time.Minute); err != nil {
		return fmt.Errorf("control plane: %w", err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "data", "admin.kubeconfig"))
	if err != nil {
		return err
	}
	config.QPS = -1
	claims := versioned.NewForConfigOrDie(config).NetworkingV1alpha1().NetworkClaims()
	ctx := context.Background()

	start := time.Now()
	if err := fill(ctx, claims, present); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created and decided %d claims in %s\n", present, time.Since(start).Round(time.Millisecond))

	latencies, err := measure(ctx, claims, samples, 0)
	if err != nil {
		return err
	}
	promotions, err := measurePromotion(ctx, claims, promotionSamples)
	if err != nil {
		return err
	}

	// After a restart the ledger is rebuilt from 10,000 statuses: how long
	// until the first new claim is allocated.
	if err := cp.Stop(); err != nil {
		return err
	}
	restart := time.Now()
	cp, err = benchutil.Start(binary, args, filepath.Join(dir, "controlplane-restart.log"))
	if err != nil {
		return err
	}
	if err := benchutil.WaitReady(port, cp, time.Minute); err != nil {
		return fmt.Errorf("control plane after restart: %w", err)
	}
	ready := time.Since(restart)
	first, err := measure(ctx, claims, 1, samples)
	if err != nil {
		return err
	}

	fmt.Printf("\nNetworkClaim latency with %d claims present, one operation at a time\n\n", present)
	fmt.Printf("%-44s %8s %9s %9s %9s %9s %9s\n", "figure", "samples", "p50", "p90", "p99", "max", "min")
	row("create to Allocated", latencies)
	row("delete the holder to the waiter Allocated", promotions)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("\nafter a restart with %d claims: ready in %s, first new claim allocated %s after it was sent (%s after exec)\n",
		present+samples, ready.Round(time.Millisecond), ms(first[0]), (ready + first[0]).Round(time.Millisecond))
	return nil
}

const promotionSamples = 100

func row(name string, d []time.Duration) {
	slices.Sort(d)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	q := func(f float64) string { return ms(d[min(len(d)-1, int(f*float64(len(d))))]) }
	fmt.Printf("%-44s %8d %9s %9s %9s %9s %9s\n", name, len(d), q(0.50), q(0.90), q(0.99), ms(d[len(d)-1]), ms(d[0]))
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
		if err := waitDecision(w, holder, networkingv1alpha1.AllocationAllocated); err != nil {
			return nil, err
		}
		if _, err := claims.Create(ctx, claim(waiter, prefix), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if err := waitDecision(w, waiter, networkingv1alpha1.AllocationUnavailable); err != nil {
			return nil, err
		}
		sent := time.Now()
		if err := claims.Delete(ctx, holder, metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
		if err := waitDecision(w, waiter, networkingv1alpha1.AllocationAllocated); err != nil {
			return nil, err
		}
		out = append(out, time.Since(sent))
	}
	return out, nil
}

// fill creates n claims, 16 at a time, and waits until all are decided.
// Every tenth claims a /16 over nine /24s of others, so it waits.
func fill(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				prefix := fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
				if i%10 == 9 {
					prefix = fmt.Sprintf("10.%d.0.0/16", i/256)
				}
				if _, err := claims.Create(ctx, claim(fmt.Sprintf("present-%05d", i), prefix), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		list, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		undecided := 0
		for i := range list.Items {
			if !networkregistry.Decided(&list.Items[i]) {
				undecided++
			}
		}
		if undecided == 0 {
			return nil
		}
		time.Sleep(time.Second)
	}
	return errors.New("claims still undecided after 10 minutes")
}

// measure creates n claims one at a time, from offset, and returns how long
// each took from create to a watch event showing it Allocated.
func measure(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface, n, offset int) ([]time.Duration, error) {
	w, err := watchFromNow(ctx, claims)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	out := make([]time.Duration, 0, n)
	for i := offset; i < offset+n; i++ {
		name := fmt.Sprintf("measured-%05d", i)
		prefix := fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256)
		sent := time.Now()
		if _, err := claims.Create(ctx, claim(name, prefix), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if err := waitDecision(w, name, networkingv1alpha1.AllocationAllocated); err != nil {
			return nil, err
		}
		out = append(out, time.Since(sent))
	}
	return out, nil
}

// watchFromNow watches the claims from the current resource version.
func watchFromNow(ctx context.Context, claims clientv1alpha1.NetworkClaimInterface) (watch.Interface, error) {
	list, err := claims.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	return claims.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
}

// waitDecision waits for a watch event showing the claim's first record
// with the given status.
func waitDecision(w watch.Interface, name string, want networkingv1alpha1.AllocationStatus) error {
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch closed")
			}
			c, isClaim := ev.Object.(*networkingv1alpha1.NetworkClaim)
			if isClaim && c.Name == name && networkregistry.Decided(c) && c.Status.AddressSpace[0].Status == want {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("NetworkClaim %s not %s within a minute", name, want)
		}
	}
}

func claim(name, prefix string) *networkingv1alpha1.NetworkClaim {
	return &networkingv1alpha1.NetworkClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       networkingv1alpha1.NetworkClaimSpec{AddressSpace: []networkingv1alpha1.AddressSpaceRecord{{Prefix: prefix}}},
	}
}
