package embeddedetcd

import (
	"strings"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// logFilter adjusts what etcd logs for an embedded member, at our default
// level of "warn":
//
// Dropped, because they come with every clean start or stop and an alarming
// line every time teaches users to ignore alarming lines:
//   - while it shuts down, errors about its own listeners being closed
//     ("use of closed network connection", "server closed");
//   - on a new member, "missing term information" from the storage version
//     checks, which run before the first term is persisted and succeed on
//     their next round (etcd-io/etcd#18978);
//   - warnings about settings we chose on purpose: one socket for gRPC and
//     HTTP (nobody but us connects to it), and simple auth tokens (etcd
//     authentication is off; the socket's directory is the access control).
//
// Raised from info to warn: WAL repair after a crash, which may have dropped
// the last writes and must not go unnoticed.
//
// Held back, by the zaprepeats.Core that newLogger puts between the filter
// and the encoder: a message written less than 30 s ago (the next one
// written says how many were held back). A member of a cluster without a quorum warns several
// times a second (ReadIndex retries, slow applies, unhealthy peers) and
// would bury everything else.
type logFilter struct {
	zapcore.Core
	closing *atomic.Bool
}

var (
	droppedMessages = map[string]bool{
		"Running http and grpc server on single port. This is not recommended for production.": true,
		"simple token is not cryptographically signed":                                         true,
	}
	raisedMessages = map[string]bool{"repairing": true, "repaired": true, "repaired WAL": true}
)

func (f *logFilter) With(fields []zapcore.Field) zapcore.Core {
	return &logFilter{Core: f.Core.With(fields), closing: f.closing}
}

// Enabled admits info entries whatever the level, so that Check sees the
// ones it raises; Check applies the real level.
func (f *logFilter) Enabled(level zapcore.Level) bool {
	return level >= zapcore.InfoLevel || f.Core.Enabled(level)
}

func (f *logFilter) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if entry.Level < zapcore.WarnLevel && raisedMessages[entry.Message] {
		entry.Level = zapcore.WarnLevel
	}
	if f.Core.Enabled(entry.Level) && !droppedMessages[entry.Message] {
		return checked.AddCore(entry, f)
	}
	return checked
}

func (f *logFilter) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	if f.closing.Load() && hasErrorMatching(fields, isListenerClosed) {
		return nil
	}
	if hasErrorMatching(fields, func(msg string) bool { return strings.HasSuffix(msg, "missing term information") }) {
		return nil
	}
	return f.Core.Write(entry, fields)
}

func isListenerClosed(msg string) bool {
	return strings.Contains(msg, "use of closed network connection") || strings.HasSuffix(msg, "server closed") || strings.HasSuffix(msg, "Server closed")
}

func hasErrorMatching(fields []zapcore.Field, match func(string) bool) bool {
	for _, field := range fields {
		if err, ok := field.Interface.(error); ok && field.Type == zapcore.ErrorType && match(err.Error()) {
			return true
		}
	}
	return false
}
