package controlplane

import (
	"context"
	"testing"
	"time"
)

// The start-up garbage goes back to the OS once the process idles, not
// while it is busy; a process that stays busy keeps it.
func TestWaitUntilIdle(t *testing.T) {
	const interval = time.Millisecond
	busy, idle := interval/2, interval/20
	for _, tc := range []struct {
		name  string
		used  []time.Duration // CPU used over each interval
		polls int
		want  bool
		reads int
	}{
		{name: "idle at once", used: []time.Duration{idle}, polls: 5, want: true, reads: 2},
		{name: "busy, then idle", used: []time.Duration{busy, busy, idle}, polls: 5, want: true, reads: 4},
		{name: "busy throughout", used: []time.Duration{busy, busy, busy}, polls: 3, want: false, reads: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var total time.Duration
			reads := 0
			cpu := func() (time.Duration, bool) {
				if reads > 0 {
					total += tc.used[reads-1]
				}
				reads++
				return total, true
			}
			got := waitUntilIdle(t.Context(), cpu, interval, tc.polls)
			if got != tc.want || reads != tc.reads {
				t.Errorf("waitUntilIdle = %v after %d readings, want %v after %d", got, reads, tc.want, tc.reads)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if waitUntilIdle(ctx, func() (time.Duration, bool) { return 0, true }, interval, 5) {
		t.Error("waitUntilIdle returned true after its context was done")
	}
	if !waitUntilIdle(t.Context(), func() (time.Duration, bool) { return 0, false }, interval, 5) {
		t.Error("without CPU readings, waitUntilIdle did not return true at once")
	}
}
