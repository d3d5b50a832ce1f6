package embeddedetcd

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/zaprepeats"
)

func TestCloseNoiseFilter(t *testing.T) {
	closedConn := errors.New("accept tcp 127.0.0.1:2380: use of closed network connection")
	cases := []struct {
		name    string
		closing bool
		fields  []zap.Field
		wantLog bool
	}{
		{name: "closed connection while closing", closing: true, fields: []zap.Field{zap.Error(closedConn)}},
		{name: "wrapped closed connection while closing", closing: true, fields: []zap.Field{zap.Error(fmt.Errorf("serving: %w", closedConn))}},
		{name: "http server closed while closing", closing: true, fields: []zap.Field{zap.Error(http.ErrServerClosed)}},
		{name: "grpc Server closed while closing", closing: true, fields: []zap.Field{zap.Error(errors.New("grpc: Server closed"))}},
		{name: "closed connection among other fields", closing: true, fields: []zap.Field{zap.String("address", "127.0.0.1:2380"), zap.Error(closedConn)}},
		{name: "named error field", closing: true, fields: []zap.Field{zap.NamedError("serve-error", closedConn)}},

		{name: "closed connection while running", closing: false, fields: []zap.Field{zap.Error(closedConn)}, wantLog: true},
		{name: "http server closed while running", closing: false, fields: []zap.Field{zap.Error(http.ErrServerClosed)}, wantLog: true},
		{name: "other error while closing", closing: true, fields: []zap.Field{zap.Error(errors.New("mvcc: database space exceeded"))}, wantLog: true},
		{name: "message only while closing", closing: true, wantLog: true},
		{name: "same text in a string field", closing: true, fields: []zap.Field{zap.String("error", closedConn.Error())}, wantLog: true},
		{name: "server closed not at the end", closing: true, fields: []zap.Field{zap.Error(errors.New("server closed the stream: quota exceeded"))}, wantLog: true},
		{name: "nil error", closing: true, fields: []zap.Field{zap.Error(nil)}, wantLog: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			closing := new(atomic.Bool)
			closing.Store(tc.closing)
			logger := zap.New(&logFilter{Core: core, closing: closing})

			logger.Error("serve failed", tc.fields...)
			if got := logs.Len(); got != map[bool]int{true: 1, false: 0}[tc.wantLog] {
				t.Errorf("%d entries logged, want logged: %v", got, tc.wantLog)
			}
		})
	}
}

func TestCloseNoiseFilterFollowsClosing(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	closing := new(atomic.Bool)
	// Loggers derived with With, as etcd derives them per component, share the flag.
	logger := zap.New(&logFilter{Core: core, closing: closing}).With(zap.String("component", "embedded-etcd"))
	err := errors.New("accept tcp: use of closed network connection")

	logger.Error("before close", zap.Error(err))
	closing.Store(true)
	logger.Error("during close", zap.Error(err))
	logger.Warn("unrelated during close", zap.Error(errors.New("disk full")))
	logger.Debug("below the level", zap.Error(errors.New("disk full")))

	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
		if e.ContextMap()["component"] != "embedded-etcd" {
			t.Errorf("entry %q lost the logger's fields: %v", e.Message, e.ContextMap())
		}
	}
	want := []string{"before close", "unrelated during close"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

func TestNewLoggerLevel(t *testing.T) {
	closing := new(atomic.Bool)
	for _, tc := range []struct {
		level   string
		enabled zapcore.Level
		off     zapcore.Level
	}{
		{level: "warn", enabled: zapcore.WarnLevel, off: zapcore.InfoLevel},
		{level: "error", enabled: zapcore.ErrorLevel, off: zapcore.WarnLevel},
		{level: "debug", enabled: zapcore.DebugLevel, off: zapcore.DebugLevel - 1},
	} {
		logger, err := newLogger(tc.level, "/var/lib/sgcp/etcd", closing)
		if err != nil {
			t.Fatalf("newLogger(%q): %v", tc.level, err)
		}
		// Check decides whether an entry is written.
		if logger.Check(tc.enabled, "an entry") == nil || logger.Check(tc.off, "an entry") != nil {
			t.Errorf("newLogger(%q): %s written %v, %s written %v", tc.level, tc.enabled, logger.Check(tc.enabled, "an entry") != nil, tc.off, logger.Check(tc.off, "an entry") != nil)
		}
		filter, ok := logger.Core().(*logFilter)
		if !ok {
			t.Errorf("newLogger(%q) core is a %T, want the close noise filter", tc.level, logger.Core())
			continue
		}
		// What etcd repeats while its cluster has no quorum is held back.
		if _, ok := filter.Core.(*zaprepeats.Core); !ok {
			t.Errorf("newLogger(%q) filters into a %T, want one that holds back repeats", tc.level, filter.Core)
		}
	}
	if _, err := newLogger("chatty", "/var/lib/sgcp/etcd", closing); err == nil {
		t.Error(`newLogger("chatty") succeeded`)
	}
}

func TestNewMemberStorageVersionRaceIsDropped(t *testing.T) {
	inner, logs := observer.New(zapcore.InfoLevel)
	logger := zap.New(&logFilter{Core: inner, closing: new(atomic.Bool)})
	logger.Error("failed to update storage version", zap.String("cluster-version", "3.6.0"), zap.Error(errors.New("cannot detect storage schema version: missing term information")))
	logger.Error("failed to update storage version", zap.Error(errors.New("disk full")))
	if got := logs.Len(); got != 1 {
		t.Fatalf("%d entries logged, want only the real failure", got)
	}
	if msg := logs.All()[0].ContextMap()["error"]; msg != "disk full" {
		t.Fatalf("logged %v, want the disk full failure", msg)
	}
}

func TestLogFilterAtWarnLevel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		log       func(*zap.Logger)
		wantLevel zapcore.Level
		wantLines int
	}{
		{"WAL repair is raised to warn", func(l *zap.Logger) { l.Info("repaired WAL", zap.Error(errors.New("unexpected EOF"))) }, zapcore.WarnLevel, 1},
		{"repairing a WAL file is raised to warn", func(l *zap.Logger) { l.Info("repairing", zap.String("path", "0.wal")) }, zapcore.WarnLevel, 1},
		{"other info stays below warn", func(l *zap.Logger) { l.Info("restarting local member") }, 0, 0},
		{"single-port warning is dropped", func(l *zap.Logger) {
			l.Warn("Running http and grpc server on single port. This is not recommended for production.")
		}, 0, 0},
		{"schema race on a new member is dropped", func(l *zap.Logger) {
			l.Warn("Failed to detect schema version", zap.Error(errors.New("missing term information")))
		}, 0, 0},
		{"a new member's first election, skipped until its bootstrap entry applies, is lowered to info", func(l *zap.Logger) {
			l.Sugar().Warnf("%x cannot campaign at term %d since there are still pending configuration changes to apply", uint64(0x8e9e05c52164694d), 1)
		}, 0, 0},
		{"pending configuration changes at a later term still warn", func(l *zap.Logger) {
			l.Sugar().Warnf("%x cannot campaign at term %d since there are still pending configuration changes to apply", uint64(0x8e9e05c52164694d), 7)
		}, zapcore.WarnLevel, 1},
		{"other warnings pass", func(l *zap.Logger) { l.Warn("slow fdatasync") }, zapcore.WarnLevel, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, logs := observer.New(zapcore.WarnLevel)
			tc.log(zap.New(&logFilter{Core: inner, closing: new(atomic.Bool)}).With(zap.String("component", "embedded-etcd")))
			if logs.Len() != tc.wantLines {
				t.Fatalf("%d lines logged, want %d", logs.Len(), tc.wantLines)
			}
			if tc.wantLines > 0 && logs.All()[0].Level != tc.wantLevel {
				t.Fatalf("logged at %s, want %s", logs.All()[0].Level, tc.wantLevel)
			}
		})
	}
}

// noExit stands in for the exit that follows a Fatal entry.
type noExit struct{}

func (noExit) OnWrite(*zapcore.CheckedEntry, []zapcore.Field) {}

// When etcd stops on a full filesystem, its last line is followed by one
// that names the cause and what to do; other failures are left as etcd
// writes them.
func TestLogFilterNamesAFullFilesystem(t *testing.T) {
	walWrite := &fs.PathError{Op: "write", Path: "/var/lib/sgcp/etcd/member/wal/0.tmp", Err: syscall.ENOSPC}
	for _, tc := range []struct {
		name        string
		log         func(*zap.Logger)
		wantNoSpace bool
	}{
		{"fatal on a WAL write", func(l *zap.Logger) {
			l.Fatal("failed to save Raft hard state and entries", zap.Error(fmt.Errorf("cutting the WAL: %w", walWrite)))
		}, true},
		{"fatal on an error wrapped with %v", func(l *zap.Logger) {
			l.Fatal("failed to commit tx", zap.Error(fmt.Errorf("bbolt: %v", walWrite)))
		}, true},
		{"panic", func(l *zap.Logger) { l.DPanic("failed to save snapshot", zap.Error(walWrite)) }, true},
		{"fatal for another cause", func(l *zap.Logger) {
			l.Fatal("failed to save Raft hard state and entries", zap.Error(errors.New("input/output error")))
		}, false},
		{"an error etcd goes on after", func(l *zap.Logger) { l.Error("failed to purge file", zap.Error(walWrite)) }, false},
		{"the cause in a string field only", func(l *zap.Logger) { l.Fatal("stopping", zap.String("reason", walWrite.Error())) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, logs := observer.New(zapcore.WarnLevel)
			logger := zap.New(&logFilter{Core: inner, closing: new(atomic.Bool), dataDir: "/var/lib/sgcp/etcd"}, zap.WithFatalHook(noExit{})).With(zap.String("component", "embedded-etcd"))
			tc.log(logger)

			entries := logs.All()
			last := entries[len(entries)-1]
			if !tc.wantNoSpace {
				if len(entries) != 1 || last.Message == noSpaceMessage {
					t.Fatalf("written %v, want etcd's entry alone", entries)
				}
				return
			}
			if len(entries) != 2 {
				t.Fatalf("%d entries written, want etcd's and the cause", len(entries))
			}
			if last.Message != noSpaceMessage || last.Level != entries[0].Level {
				t.Errorf("last written %q at %s, want %q at %s", last.Message, last.Level, noSpaceMessage, entries[0].Level)
			}
			fields := last.ContextMap()
			if fields["dataDir"] != "/var/lib/sgcp/etcd" || fields["component"] != "embedded-etcd" {
				t.Errorf("the cause's fields are %v, want the data dir and the logger's component", fields)
			}
		})
	}
}
