package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"

	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// tracedOffset is the index of the first claim of the traced pass: its
// claims come after the measured ones (exactClaim's prefixes reach up to
// 4095 claims).
const tracedOffset = 2048

// profileExact creates o.samples exact-prefix claims one at a time, as
// measure does, while a CPU profile and an execution trace of the control
// plane are taken for o.profileFor into o.profile, and writes the slowest
// of them with their offsets into the trace. It returns once the trace is
// saved, so that the tracer is off for what is measured next.
func profileExact(ctx context.Context, admin rest.Interface, cp *benchutil.Process, claims clientv1alpha1.NetworkClaimInterface, o options) error {
	var g errgroup.Group
	from := time.Now()
	g.Go(func() error {
		return saveProfile(ctx, admin, cp, "profile", o.profileFor, filepath.Join(o.profile, "exact-cpu.pb.gz"))
	})
	g.Go(func() error {
		return saveProfile(ctx, admin, cp, "trace", o.profileFor, filepath.Join(o.profile, "exact-trace.out"))
	})
	took, sent, _, err := measure(ctx, claims, o.samples, tracedOffset, exactClaim)
	if err := g.Wait(); err != nil {
		return err
	}
	if err != nil {
		return err
	}
	return writeSlowest(filepath.Join(o.profile, "exact-slowest.txt"), from, o.profileFor, took, sent)
}

// writeSlowest writes the samples slower than the p99 goal that were sent
// within the profiled window, with their offset from its start, slowest
// first, to find them in the trace (go tool trace shows times from its
// start).
func writeSlowest(path string, from time.Time, window time.Duration, took []time.Duration, sent []time.Time) error {
	order := make([]int, len(took))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(took[b] - took[a]) })
	var b strings.Builder
	fmt.Fprintf(&b, "exact-prefix samples slower than %s sent within the %s traced: offset of the create into the trace, create to Allocated\n", goalP99, window)
	for _, i := range order {
		offset := sent[i].Sub(from)
		if took[i] <= goalP99 {
			break
		}
		if offset < 0 || offset > window {
			continue
		}
		fmt.Fprintf(&b, "%10.1f ms %8.1f ms\n", float64(offset.Microseconds())/1000, float64(took[i].Microseconds())/1000)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
