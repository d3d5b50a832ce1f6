package phases

import (
	"errors"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// profiles are the files the start is profiled into, where set: a CPU
// profile and an execution trace of this process. For the in-process
// server that is the server's own start; for the others, the client's.
type profiles struct{ cpu, trace string }

// start starts the profiles and returns what stops them and closes their
// files.
func (p profiles) start() (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for _, s := range stops {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	if p.cpu != "" {
		f, err := os.Create(p.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close() //nolint:errcheck
			return nil, err
		}
		stops = append(stops, func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		if err := trace.Start(f); err != nil {
			return nil, errors.Join(err, f.Close(), stop())
		}
		stops = append(stops, func() error { trace.Stop(); return f.Close() })
	}
	return stop, nil
}
