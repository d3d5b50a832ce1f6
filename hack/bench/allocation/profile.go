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

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// profileLatencies saves a CPU profile and an execution trace of the
// control plane for the next o.profileFor into o.profile, while the
// latencies are measured.
func profileLatencies(ctx context.Context, admin rest.Interface, cp *benchutil.Process, o options) error {
	var g errgroup.Group
	g.Go(func() error {
		return saveProfile(ctx, admin, cp, "profile", o.profileFor, filepath.Join(o.profile, "exact-cpu.pb.gz"))
	})
	g.Go(func() error {
		return saveProfile(ctx, admin, cp, "trace", o.profileFor, filepath.Join(o.profile, "exact-trace.out"))
	})
	return g.Wait()
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
