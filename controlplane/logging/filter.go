// Package logging keeps the control plane's log short enough to read: at
// the default verbosity a normal start prints next to nothing, and an error
// that repeats (every watch on an etcd without a leader, say) is written
// once and then counted.
//
// It works on the formatted lines of klog's text and JSON loggers, as the
// io.Writer that component-base's logging configuration writes to, so that
// every route into klog (klog's functions, contextual loggers, gRPC's
// logger) passes through it and the configured format stays as it is.
package logging

import (
	"io"
	"runtime"
	"time"

	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/utils/clock"
)

// RepeatPeriod is how often an entry that keeps repeating is counted.
const RepeatPeriod = time.Minute

// quietBelow is the verbosity from which everything is shown: -v=2 shows
// what a control plane logged before this package existed.
const quietBelow = 2

// Filter is an io.Writer between a logger and its stream. Warnings and
// errors are written the first time their call logs them in a period and
// counted after that. At the default verbosity (text format, below -v=2,
// no -vmodule), informational messages of the libraries (the Kubernetes
// API server and controllers logging every informer, controller and
// listener they start) and the warnings every clean start logs
// (startupNoise) are left out; the control plane's own are kept.
type Filter struct {
	format lineFormat
	quiet  bool
	// caller returns the call that logs the entry being written; tests
	// replace it.
	caller  func() (runtime.Frame, bool)
	repeats *repeatLimiter
}

// NewFilter returns a filter that writes to out the entries of a logger
// configured by c.
func NewFilter(out io.Writer, c *logsapi.LoggingConfiguration) *Filter {
	f := newFilter(out, c, clock.RealClock{})
	f.repeats.ticks = clock.RealClock{}
	return f
}

func newFilter(out io.Writer, c *logsapi.LoggingConfiguration, clock clock.PassiveClock) *Filter {
	f := &Filter{caller: loggingCall, repeats: newRepeatLimiter(out, clock, RepeatPeriod)}
	switch c.Format {
	case "", logsapi.DefaultLogFormat:
		f.format = textFormat{}
		// Asked for detail, with -v or -vmodule: show everything asked for.
		f.quiet = c.Verbosity < quietBelow && len(c.VModule) == 0
	case "json":
		// Meant for machines, which filter for themselves; and in JSON,
		// klog's warnings are indistinguishable from informational
		// messages, so leaving libraries' messages out would hide them.
		f.format = jsonFormat{}
	}
	return f
}

// Write writes p, one entry of the logger, unless the filter leaves it out.
func (f *Filter) Write(p []byte) (int, error) {
	if f.format == nil {
		return f.repeats.writeThrough(p)
	}
	e, ok := f.format.parse(p)
	if !ok {
		return f.repeats.writeThrough(p)
	}
	severe := e.severity == severityWarning || e.severity == severityError
	if !severe && !f.quiet {
		return f.repeats.writeThrough(p)
	}
	call, known := f.caller()
	if f.quiet && f.leftOut(e, call, known) {
		return len(p), nil
	}
	if !severe {
		return f.repeats.writeThrough(p)
	}
	// The format names the call's file by its base name (text) or last
	// directory (JSON), which many packages share (controller.go): the
	// call's full path keeps their repeats apart.
	key := string(e.severity) + " " + e.location
	if known {
		key += " " + call.File
	}
	return f.repeats.write(key, p, f.format)
}

// leftOut reports whether the quiet default leaves e out: a library's
// informational message (kept when the caller is unknown, so that nothing
// is left out by mistake), or a warning every clean start logs.
func (f *Filter) leftOut(e entry, call runtime.Frame, known bool) bool {
	switch e.severity {
	case severityInfo:
		return known && !isOwnFunction(call.Function)
	case severityWarning, severityError:
		return isStartupNoise(e.message)
	}
	return false
}

// Flush writes the counts of the entries held back so far, e.g. before the
// process exits.
func (f *Filter) Flush() {
	f.repeats.flush()
}
