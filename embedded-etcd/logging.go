package embeddedetcd

import (
	"strings"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// closeNoiseFilter drops the errors etcd logs about its own listeners being
// closed while it shuts down ("use of closed network connection", "server
// closed"): on a clean stop they are expected, and an "error" line in the
// log of every clean shutdown teaches users to ignore errors.
type closeNoiseFilter struct {
	zapcore.Core
	closing *atomic.Bool
}

func (f *closeNoiseFilter) With(fields []zapcore.Field) zapcore.Core {
	return &closeNoiseFilter{Core: f.Core.With(fields), closing: f.closing}
}

func (f *closeNoiseFilter) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if f.Enabled(entry.Level) {
		return checked.AddCore(entry, f)
	}
	return checked
}

func (f *closeNoiseFilter) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	if f.closing.Load() && isListenerClosedError(fields) {
		return nil
	}
	return f.Core.Write(entry, fields)
}

func isListenerClosedError(fields []zapcore.Field) bool {
	for _, field := range fields {
		err, ok := field.Interface.(error)
		if field.Type != zapcore.ErrorType || !ok {
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "use of closed network connection") || strings.HasSuffix(msg, "server closed") || strings.HasSuffix(msg, "Server closed") {
			return true
		}
	}
	return false
}
