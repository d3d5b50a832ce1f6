package controlplane

import (
	"context"
	"time"
)

// Start-up leaves garbage that the server returns to the OS once, when the
// burst of work that follows readiness is over: the controllers' first
// lists and what they do with them (the allocator's rebuild, the garbage
// collector's graph). Returning it is a forced collection and a scavenge
// of every free page, whose cost grows with the heap: with 100,000
// NetworkClaims stored, seconds of CPU, most of it in madvise, and then page
// faults as the heap grows back. So it waits until the process idles.
const (
	// idlePollInterval is how often the process's CPU time is read.
	idlePollInterval = time.Second
	// idleShare is the share of one CPU under which the process idles over
	// a poll interval.
	idleShare = 0.1
	// idlePolls bounds the wait: a process busy for this many intervals
	// after its controllers synced keeps its start-up garbage, of which
	// the runtime's scavenger returns what exceeds the heap's goal by
	// itself.
	idlePolls = 60
)

// waitUntilIdle reads cpu, the process's CPU time so far, every interval,
// and returns true once it grew by less than idleShare of the interval, or
// false after polls intervals without that or when ctx is done. Without a
// reading (ok false) it returns true at once.
func waitUntilIdle(ctx context.Context, cpu func() (time.Duration, bool), interval time.Duration, polls int) bool {
	last, ok := cpu()
	if !ok {
		return true
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for range polls {
		select {
		case <-ctx.Done():
		case <-ticker.C:
		}
		if ctx.Err() != nil {
			return false
		}
		now, _ := cpu()
		if float64(now-last) < idleShare*float64(interval) {
			return true
		}
		last = now
	}
	return false
}
