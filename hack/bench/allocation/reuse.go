package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// reuseOffset is the index of the first claim that restarts on a reused
// data dir create: past the measured claims and the traced pass, inside
// the 4096 prefixes exactClaim has.
const reuseOffset = 3072

// reuseCounter is the file in a reused directory that says how many
// restarts were measured on it, so that each creates claims of its own.
const reuseCounter = "reuse-restarts"

// runReuse measures only restarts, on the data dir of an earlier run that
// kept it (-keep), so that a change to start-up is measured without
// filling the registry again. The restarts create claims as a run's
// restarts do, named after a counter kept in the directory.
func runReuse(o options) error {
	dir := o.reuse
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(data); err != nil {
		return fmt.Errorf("-reuse: %w", err)
	}
	done := 0
	if b, err := os.ReadFile(filepath.Join(dir, reuseCounter)); err == nil {
		if done, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return fmt.Errorf("-reuse: %s: %w", reuseCounter, err)
		}
	}
	if reuseOffset+done+o.restarts > tracedOffset*2 {
		return fmt.Errorf("-reuse: %d restarts were measured on %s already; fill a new one", done, dir)
	}
	args, err := serverArgs(&o, data)
	if err != nil {
		return err
	}
	port := o.port
	ctx := context.Background()
	var r results
	var cp *benchutil.Process
	defer func() {
		if cp != nil {
			_ = cp.Stop()
		}
	}()
	for i := range o.restarts {
		fmt.Fprintf(os.Stderr, "restart %d/%d on %s\n", i+1, o.restarts, data)
		if cp != nil {
			if err := cp.Stop(); err != nil {
				return err
			}
		}
		// The kubeconfig the server writes names its port; the clients
		// are built before it starts, for the given one.
		clients, err := newClients(filepath.Join(data, "admin.kubeconfig"), fmt.Sprintf("https://127.0.0.1:%d", port), 1)
		if err != nil {
			return err
		}
		claims := clients[0].NetworkingV1alpha1().NetworkClaims()
		admin := clients[0].Discovery().RESTClient()
		profile := ""
		if o.profile != "" && i == 0 {
			profile = filepath.Join(o.profile, "restart-cpu.pb.gz")
		}
		n := reuseOffset + done + i
		if err := os.WriteFile(filepath.Join(dir, reuseCounter), []byte(strconv.Itoa(done+i+1)), 0o644); err != nil {
			return err
		}
		logFile := filepath.Join(dir, fmt.Sprintf("controlplane-reuse-%d.log", done+i+1))
		// Both kinds are created, as a run whose allocator allocates
		// pool records does (this one's does).
		started, m, err := measureRestart(ctx, o, args, logFile, claims, admin, n, true, profile)
		if started == nil {
			return err
		}
		cp = started
		if errors.Is(err, errTimeout) {
			r.restartTimedOut = true
			break
		}
		if err != nil {
			return err
		}
		r.restarts = append(r.restarts, m)
		fmt.Fprintf(os.Stderr, "  ready %.2f s, informer synced %.2f s, ledger rebuilt %.2f s, exact claim Allocated %.2f s, pool record Allocated %.2f s; CPU %.2f s until ready, %.2f s until both Allocated (log: %s)\n",
			m.ready.Seconds(), m.synced.Seconds(), m.rebuilt.Seconds(), m.exact.Seconds(), m.pooled.Seconds(), m.cpuReady.Seconds(), m.cpu.Seconds(), logFile)
		if r.claims == 0 {
			list, err := claims.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if list != nil && list.RemainingItemCount != nil {
				r.claims = int(*list.RemainingItemCount) + len(list.Items)
			}
		}
	}
	r.layout.pooled = 1 // measureRestart created pool records
	reportRestarts(o, r)
	return nil
}
