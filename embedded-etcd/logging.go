package embeddedetcd

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
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
// Lowered from warn to info: raft skipping the first election of a new
// member because etcd has not applied the member's bootstrap configuration
// entry yet ("cannot campaign at term 1 since there are still pending
// configuration changes to apply"). raft leaves that entry unapplied at
// bootstrap on purpose (raft's bootstrap.go), etcd applies it
// asynchronously, and a one-member cluster's first election timeout
// (etcd fast-forwards its ticks, server.go adjustTicks) can run out first
// on a busy machine; raft campaigns again one election timeout later. The
// guard is deliberate (etcd-io/etcd#12133, PR #12134), and delaying a
// campaign is harmless (PR #9073). Only term 1 is lowered: a cluster stuck
// on a configuration change at a later term still warns.
//
// Raised from info to warn: WAL repair after a crash, which may have dropped
// the last writes and must not go unnoticed.
//
// Held back, by the zaprepeats.Core that newLogger puts between the filter
// and the encoder: a message written less than 30 s ago (the next one
// written says how many were held back). A member of a cluster without a
// quorum warns several times a second (ReadIndex retries, slow applies,
// unhealthy peers) and would bury everything else.
//
// Followed by a line of ours: an entry on which etcd exits or panics
// because the data dir's filesystem is full (a write of the WAL or the
// database failed with ENOSPC). etcd's own line names the write that
// failed; ours, the process's last, says what the user does about it.
type logFilter struct {
	zapcore.Core
	closing *atomic.Bool
	// dataDir is the member's, named in the line on a full filesystem.
	dataDir string
}

var (
	droppedMessages = map[string]bool{
		"Running http and grpc server on single port. This is not recommended for production.": true,
		"simple token is not cryptographically signed":                                         true,
	}
	raisedMessages = map[string]bool{"repairing": true, "repaired": true, "repaired WAL": true}
)

func (f *logFilter) With(fields []zapcore.Field) zapcore.Core {
	return &logFilter{Core: f.Core.With(fields), closing: f.closing, dataDir: f.dataDir}
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
	if entry.Level == zapcore.WarnLevel && isBootstrapCampaignDelay(entry.Message) {
		entry.Level = zapcore.InfoLevel
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
	err := f.Core.Write(entry, fields)
	if entry.Level > zapcore.ErrorLevel && hasError(fields, isNoSpace) {
		// etcd exits (Fatal) or panics once this returns. A member
		// stops at the first write that fails, before it acknowledges
		// it: what it acknowledged is in its WAL, replayed at the next
		// start.
		noSpace := zapcore.Entry{Level: entry.Level, Time: entry.Time, LoggerName: entry.LoggerName, Message: noSpaceMessage}
		err = errors.Join(err, f.Core.Write(noSpace, []zapcore.Field{zap.String("dataDir", f.dataDir)}), f.Core.Sync())
	}
	return err
}

// isBootstrapCampaignDelay matches raft skipping the first election of a
// new member (see logFilter). etcd logs raft's messages formatted, through
// a sugared logger, so the message ends with raft's text.
func isBootstrapCampaignDelay(msg string) bool {
	return strings.HasSuffix(msg, " cannot campaign at term 1 since there are still pending configuration changes to apply")
}

// noSpaceMessage is the last line of a member that stops on a full
// filesystem.
const noSpaceMessage = "The data dir's filesystem is full, and the embedded etcd member stops the server. Free space on it and start the server again: every write the server acknowledged is kept."

// isNoSpace reports whether err is a write's failure on a full filesystem.
// etcd wraps some errors with %v, which keeps only their text.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), syscall.ENOSPC.Error())
}

func isListenerClosed(msg string) bool {
	return strings.Contains(msg, "use of closed network connection") || strings.HasSuffix(msg, "server closed") || strings.HasSuffix(msg, "Server closed")
}

func hasErrorMatching(fields []zapcore.Field, match func(string) bool) bool {
	return hasError(fields, func(err error) bool { return match(err.Error()) })
}

func hasError(fields []zapcore.Field, match func(error) bool) bool {
	for _, field := range fields {
		if err, ok := field.Interface.(error); ok && field.Type == zapcore.ErrorType && match(err) {
			return true
		}
	}
	return false
}
