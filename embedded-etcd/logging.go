package embeddedetcd

import (
	"strings"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// closeNoiseFilter drops error lines etcd logs in the normal course of a
// clean life, since an "error" on every start or stop teaches users to
// ignore errors:
//   - while it shuts down, the errors about its own listeners being closed
//     ("use of closed network connection", "server closed");
//   - on a new member, "failed to update storage version ... missing term
//     information": the version monitor runs before the first term is
//     persisted and succeeds on its next round (etcd-io/etcd#18978).
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
	if entry.Message == "failed to update storage version" && hasError(fields, "missing term information") {
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

func hasError(fields []zapcore.Field, msg string) bool {
	for _, field := range fields {
		if err, ok := field.Interface.(error); ok && field.Type == zapcore.ErrorType && err.Error() == msg {
			return true
		}
	}
	return false
}
