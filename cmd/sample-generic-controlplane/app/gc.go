package app

import (
	"os"
	"runtime/debug"
	"sync"
)

// startupGCPercent is the garbage collector's target (GOGC) while the control
// plane starts. Start-up allocates several times what it keeps: upstream
// builds the OpenAPI documents of every API and throws the pieces away. At
// the default target of 100 the collector runs about a dozen times on the
// way to ready, and its assists slow the goroutine that builds them. At 400
// the chain is created and prepared about 50 ms sooner (of some 340 ms,
// measured on two cores), for a peak RSS about 30 MB higher and an idle RSS
// about 10 MB higher.
const startupGCPercent = 400

// runningGCPercent is the garbage collector's target once the control plane
// serves. The API server, etcd and the controllers share one heap, and a
// write allocates in all three: at the default of 100 the collector's share
// of the CPU under 32 writers is about a tenth, and each create costs about
// 10% more CPU than at 200 (docs/performance.md, "Write path"). At rest the
// heap barely grows, so the idle RSS stays where it was; under load the heap
// may grow to three times what is live instead of two.
const runningGCPercent = 200

// raiseGCForStartup sets startupGCPercent, unless GOGC says otherwise, and
// returns what sets runningGCPercent (once; later calls do nothing). It
// returns no garbage to the OS: the server does, once its controllers have
// synced and the process idles. At ready the controllers' first lists
// begin, and a forced collection then, with a large store (100,000
// NetworkClaims), costs seconds of CPU in their way.
func raiseGCForStartup() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	debug.SetGCPercent(startupGCPercent)
	return sync.OnceFunc(func() { debug.SetGCPercent(runningGCPercent) })
}
