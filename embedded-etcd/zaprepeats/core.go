// Package zaprepeats holds back the messages a zap logger repeats: each is
// written at most once per interval, and the next one written says how
// many were held back. etcd logs with zap, its server as its client, and
// while a cluster has no quorum both repeat a few messages several times a
// second (ReadIndex retries, unhealthy peers, the client's retries of every
// request), which would bury everything else in the log.
//
// The entries are left as they are otherwise: same format, same stream,
// and the first of each message is always written.
package zaprepeats

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/utils/clock"
)

// Interval is how often one message is written at most.
const Interval = 30 * time.Second

// HeldBackKey is the field of an entry that says how many of its message
// were held back since it was last written.
const HeldBackKey = "heldBack"

// Core writes the entries of the core it wraps, except those whose message
// was written less than its interval ago. Entries above the error level
// (DPanic, Panic, Fatal) are always written: they are the last a process
// writes before it panics or exits.
type Core struct {
	zapcore.Core
	// limiter is shared by the cores With derives, as a logger's named and
	// annotated children log the same messages.
	limiter *limiter
}

// NewCore returns a Core that writes to core and holds back what repeats
// within interval.
func NewCore(core zapcore.Core, interval time.Duration) *Core {
	return newCore(core, interval, clock.RealClock{})
}

func newCore(core zapcore.Core, interval time.Duration, clock clock.PassiveClock) *Core {
	return &Core{Core: core, limiter: &limiter{interval: interval, clock: clock, seen: map[key]*seen{}}}
}

func (c *Core) With(fields []zapcore.Field) zapcore.Core {
	return &Core{Core: c.Core.With(fields), limiter: c.limiter}
}

// Check adds c, rather than the wrapped core, so that Write sees every
// entry. A sampler the wrapped core may have is skipped: what it would
// leave out, the limit leaves out too.
func (c *Core) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(entry.Level) {
		return checked.AddCore(entry, c)
	}
	return checked
}

func (c *Core) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	if entry.Level <= zapcore.ErrorLevel {
		write, held := c.limiter.admit(key{logger: entry.LoggerName, message: entry.Message})
		if !write {
			return nil
		}
		if held > 0 {
			fields = append(fields[:len(fields):len(fields)], zap.Int(HeldBackKey, held))
		}
	}
	return c.Core.Write(entry, fields)
}

// key is what makes two entries the same message. Loggers' messages are
// constant strings (the values are fields), so the map stays small.
type key struct{ logger, message string }

// limiter admits each message at most once per interval.
type limiter struct {
	interval time.Duration
	clock    clock.PassiveClock

	mu   sync.Mutex
	seen map[key]*seen
}

type seen struct {
	written time.Time
	held    int
}

// admit reports whether to write the message of k now and, if so, how many
// of it were held back since it was last written.
func (l *limiter) admit(k key) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	s, ok := l.seen[k]
	if !ok {
		l.seen[k] = &seen{written: now}
		return true, 0
	}
	if now.Sub(s.written) < l.interval {
		s.held++
		return false, 0
	}
	held := s.held
	s.written, s.held = now, 0
	return true, held
}
