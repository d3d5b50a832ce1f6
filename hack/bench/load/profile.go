package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
)

// profileOurs runs the create load, shaped as shape says, once against ours
// with contention profiling on and saves, for the middle of the load, the
// CPU, allocation, mutex and block profiles into out, then prints the share
// of CPU time the Go garbage collector took and how to read the profiles.
func profileOurs(binary, out string, o options, shape createShape) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-load-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) //nolint:errcheck
	ours, config, err := startOurs(binary, dir, "--contention-profiling")
	if err != nil {
		return err
	}
	defer ours.Stop() //nolint:errcheck
	ctx := context.Background()
	if err := waitForControllers(ctx, config); err != nil {
		return err
	}
	admin, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// Profile the load's middle: one second after it starts, to one second
	// before it ends.
	window := o.duration - 2*time.Second
	if window < time.Second {
		return fmt.Errorf("-duration %s is too short to profile; give at least 3s", o.duration)
	}
	seconds := strconv.Itoa(int(window.Seconds()))
	var g errgroup.Group
	var result createResult
	g.Go(func() error {
		var err error
		result, err = measureCreates(ctx, config, o, shape)
		return err
	})
	time.Sleep(time.Second)
	gcBefore, cpuBefore, err := cpuSeconds(ctx, admin)
	if err != nil {
		return err
	}
	for _, name := range []string{"profile", "allocs", "mutex", "block"} {
		g.Go(func() error {
			data, err := admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/"+name).
				Param("seconds", seconds).Timeout(window + time.Minute).DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("profile %s: %w", name, err)
			}
			return os.WriteFile(filepath.Join(out, name+".pb.gz"), data, 0o644)
		})
	}
	time.Sleep(window)
	gcAfter, cpuAfter, err := cpuSeconds(ctx, admin)
	if err != nil {
		return err
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Printf("creates/s with profiling on, %s: %.0f (p50 %.1f ms, p99 %.1f ms)\n", shape, result.perSecond,
		ms(percentile(result.latencies, 50)), ms(percentile(result.latencies, 99)))
	fmt.Printf("Go GC: %.2f of %.2f CPU seconds (%.0f%%) over the profiled %s\n",
		gcAfter-gcBefore, cpuAfter-cpuBefore, 100*(gcAfter-gcBefore)/(cpuAfter-cpuBefore), window)
	fmt.Printf("profiles in %s; read them with e.g.\n", out)
	for _, name := range []string{"profile", "allocs", "mutex", "block"} {
		fmt.Printf("  go tool pprof -top %s %s\n", binary, filepath.Join(out, name+".pb.gz"))
	}
	return nil
}

// cpuSeconds reads the Go runtime's CPU accounting from /metrics: the
// garbage collector's seconds and all seconds the process used (the
// runtime's total is GOMAXPROCS times the wall time, idle included).
func cpuSeconds(ctx context.Context, client kubernetes.Interface) (gc, total float64, err error) {
	data, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("reading /metrics: %w", err)
	}
	values := map[string]float64{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		name, value, ok := strings.Cut(scanner.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			values[name] = v
		}
	}
	gc, okGC := values["go_cpu_classes_gc_total_cpu_seconds_total"]
	total, okTotal := values["go_cpu_classes_total_cpu_seconds_total"]
	idle, okIdle := values["go_cpu_classes_idle_cpu_seconds_total"]
	if !okGC || !okTotal || !okIdle {
		return 0, 0, fmt.Errorf("/metrics lacks the Go runtime's go_cpu_classes_{gc,idle}_total and go_cpu_classes_total metrics")
	}
	return gc, total - idle, nil
}
