package app

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// The collector's target is raised while the control plane starts and
// lowered to the running one when it is ready; a GOGC of the user's is left
// alone.
func TestRaiseGCForStartup(t *testing.T) {
	t.Setenv("GOGC", "")
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	before := gcPercent()
	restore := raiseGCForStartup()
	if got := gcPercent(); got != startupGCPercent {
		t.Errorf("GC target while starting: %d, want %d", got, startupGCPercent)
	}
	restore()
	restore()
	if got := gcPercent(); got != runningGCPercent {
		t.Errorf("GC target when ready: %d, want %d", got, runningGCPercent)
	}
	debug.SetGCPercent(before)

	t.Setenv("GOGC", "50")
	restore = raiseGCForStartup()
	if got := gcPercent(); got != before {
		t.Errorf("GC target while starting with GOGC set: %d, want %d untouched", got, before)
	}
	restore()
}
