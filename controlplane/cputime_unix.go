//go:build unix

package controlplane

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time, user and system, the process has used.
func processCPUTime() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
