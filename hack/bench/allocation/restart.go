package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// restartVerbosity is the -v the control plane restarts with: the
// allocator logs "Rebuilt the ledger from status" at 2, which the bench
// reads the time of the rebuild from.
const restartVerbosity = "-v=2"

// rebuiltMessage is the allocator's log line once it has rebuilt its
// ledger from the claims' status (controllers/allocation, restore).
const rebuiltMessage = `"Rebuilt the ledger from status"`

// restart is what one restart measured, each from the exec of the binary.
type restart struct {
	// ready: /readyz answered 200.
	ready time.Duration
	// synced: the allocator's informer had synced (its list of every
	// claim), which is when the rebuild started; rebuilt: the ledger was
	// rebuilt from the claims' status.
	synced, rebuilt time.Duration
	// exact, pooled: a claim created right after ready was seen Allocated
	// by a watch; pooled is zero without pools.
	exact, pooled time.Duration
	// cpu is the CPU time the control plane used from its exec until
	// both were seen Allocated: unlike the durations, it hardly depends
	// on what else runs on the machine, and on n idle cores the first
	// allocation cannot come sooner than cpu/n after the exec.
	cpu time.Duration
	// cpuReady is the CPU time it used until ready.
	cpuReady time.Duration
}

// measureRestart starts the control plane with args on a data dir that
// holds claims and measures, from the exec of the binary, when it was
// ready, when the allocator had rebuilt its ledger, and when a claim of
// each kind created right after ready was Allocated (named after i). With
// profile set, it saves a CPU profile of the restart's first
// profileFor there, from when the server first answers. The caller stops
// the returned process.
func measureRestart(ctx context.Context, o options, args []string, logFile string, claims clientv1alpha1.NetworkClaimInterface, admin rest.Interface, i int, pools bool, profile string) (*benchutil.Process, restart, error) {
	var r restart
	exec := time.Now()
	cp, err := benchutil.Start(o.binary, append(slices.Clone(args), restartVerbosity), logFile)
	if err != nil {
		return nil, r, err
	}
	profiled := make(chan error, 1)
	if profile != "" {
		go func() { profiled <- saveProfile(ctx, admin, cp, "profile", o.profileFor, profile) }()
	} else {
		profiled <- nil
	}
	if err := benchutil.WaitReady(o.port, cp, time.Minute); err != nil {
		return cp, r, fmt.Errorf("control plane after restart: %w", err)
	}
	r.ready = time.Since(exec)
	r.cpuReady = cpuTime(cp)
	exact, pooled, err := firstAllocations(ctx, claims, i, pools, o.restartTimeout)
	if err != nil {
		return cp, r, err
	}
	r.cpu = cpuTime(cp)
	r.exact = exact.Sub(exec)
	if pools {
		r.pooled = pooled.Sub(exec)
	}
	at, took, err := ledgerRebuilt(logFile, exec, time.Minute)
	if err != nil {
		return cp, r, err
	}
	r.rebuilt, r.synced = at.Sub(exec), at.Sub(exec)-took
	if err := <-profiled; err != nil {
		return cp, r, err
	}
	return cp, r, nil
}

// cpuTime is the CPU time p has used.
func cpuTime(p *benchutil.Process) time.Duration {
	return time.Duration(benchutil.CPUSeconds([]int{p.Cmd.Process.Pid}) * float64(time.Second))
}

// saveProfile waits until the control plane answers on
// /debug/pprof/NAME, then saves its profile of the next seconds to path.
// It gives up, saving nothing, when cp exits first.
func saveProfile(ctx context.Context, admin rest.Interface, cp *benchutil.Process, name string, seconds time.Duration, path string) error {
	for {
		data, err := admin.Get().AbsPath("/debug/pprof/"+name).
			Param("seconds", strconv.Itoa(int(seconds.Seconds()))).Timeout(seconds + time.Minute).DoRaw(ctx)
		if err == nil {
			return os.WriteFile(path, data, 0o644)
		}
		if cp.Exited() {
			return fmt.Errorf("profiling the restart: %w", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// klogTime is the header of klog's text format: severity, month and day,
// time of day to the microsecond.
var klogTime = regexp.MustCompile(`^[IWEF](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})`)

// rebuiltDuration is the duration the rebuilt line reports.
var rebuiltDuration = regexp.MustCompile(` duration="([^"]+)"`)

// ledgerRebuilt reads the control plane's log, waiting up to timeout for
// the allocator's line saying it rebuilt its ledger, and returns when it
// was logged and the rebuild's duration that it reports. klog writes no
// year: the line is taken to be of the year of exec (the time the process
// was started, in the local zone, as klog writes it).
func ledgerRebuilt(logFile string, exec time.Time, timeout time.Duration) (time.Time, time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		at, took, err := findRebuilt(logFile, exec)
		if !errors.Is(err, errNotLogged) || time.Now().After(deadline) {
			return at, took, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var errNotLogged = fmt.Errorf("no %s in the log (is the allocator running, at -v=2?)", rebuiltMessage)

func findRebuilt(logFile string, exec time.Time) (time.Time, time.Duration, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return time.Time{}, 0, err
	}
	defer f.Close() //nolint:errcheck
	scanner := bufio.NewScanner(f)
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, rebuiltMessage) {
			continue
		}
		header := klogTime.FindStringSubmatch(line)
		duration := rebuiltDuration.FindStringSubmatch(line)
		if header == nil || duration == nil {
			return time.Time{}, 0, fmt.Errorf("%s: cannot read the time or the duration of %q", filepath.Base(logFile), line)
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", header[1], time.Local)
		if err != nil {
			return time.Time{}, 0, err
		}
		at = at.AddDate(exec.Year(), 0, 0)
		took, err := time.ParseDuration(duration[1])
		if err != nil {
			return time.Time{}, 0, err
		}
		return at, took, nil
	}
	if err := scanner.Err(); err != nil {
		return time.Time{}, 0, err
	}
	return time.Time{}, 0, errNotLogged
}
