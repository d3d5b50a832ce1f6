package logging

import (
	"runtime"
	"strings"
)

// ownCode are the packages whose informational messages are shown at the
// default verbosity: this control plane's own module, and the program's
// main package (ours, or that of a program embedding the control plane).
var ownCode = []string{
	"sigs.k8s.io/sample-generic-controlplane/",
	"main.",
}

// loggingPackages write log entries on behalf of their callers: klog, logr
// and the loggers behind them, and this package. The first function on the
// stack outside them is the one that logs.
var loggingPackages = []string{
	"k8s.io/klog/",
	"github.com/go-logr/",
	"go.uber.org/zap",
	"k8s.io/component-base/logs/",
	"log/slog.",
	"io.",
	"sigs.k8s.io/sample-generic-controlplane/controlplane/logging.",
}

// maxLoggingDepth bounds the walk: klog's and logr's own frames between the
// caller and the writer are fewer than a dozen.
const maxLoggingDepth = 32

// loggingCall returns the call that logs what is being written (to an
// io.Writer of the logger, synchronously, as klog's text and JSON loggers
// write): the first frame outside the logging packages. False when the
// stack does not tell.
func loggingCall() (runtime.Frame, bool) {
	var pcs [maxLoggingDepth]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		frame, more := frames.Next()
		if frame.Function != "" && !isLoggingFunction(frame.Function) {
			return frame, true
		}
		if !more {
			return runtime.Frame{}, false
		}
	}
}

func isOwnFunction(function string) bool {
	for _, prefix := range ownCode {
		if strings.HasPrefix(function, prefix) {
			return true
		}
	}
	return false
}

func isLoggingFunction(function string) bool {
	for _, prefix := range loggingPackages {
		if strings.HasPrefix(function, prefix) {
			return true
		}
	}
	return false
}
