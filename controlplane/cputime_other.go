//go:build !unix

package controlplane

import "time"

// processCPUTime is not read on this platform: the server does not wait
// for the process to idle.
func processCPUTime() (time.Duration, bool) { return 0, false }
