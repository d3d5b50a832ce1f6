package zaprepeats

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	clocktesting "k8s.io/utils/clock/testing"
)

// A message written again within the interval is held back, and the next
// one written says how many were; other messages, other loggers' messages
// and entries above the error level are not held back.
func TestCoreHoldsBackRepeats(t *testing.T) {
	type step struct {
		log     func(*zap.Logger)
		advance time.Duration
	}
	retry := func(l *zap.Logger) { l.Warn("waiting for ReadIndex response took too long, retrying") }
	unhealthy := func(l *zap.Logger) { l.Warn("prober detected unhealthy status") }
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string
	}{{
		name: "first written, repeats held back and counted by the next written",
		steps: []step{
			{log: retry, advance: time.Second}, {log: retry, advance: time.Second}, {log: retry, advance: time.Minute},
			{log: retry},
		},
		want: []string{
			"waiting for ReadIndex response took too long, retrying",
			"waiting for ReadIndex response took too long, retrying heldBack=2",
		},
	}, {
		name: "each message counted apart",
		steps: []step{
			{log: retry}, {log: unhealthy}, {log: retry}, {log: retry}, {log: unhealthy, advance: time.Minute},
			{log: unhealthy}, {log: retry},
		},
		want: []string{
			"waiting for ReadIndex response took too long, retrying",
			"prober detected unhealthy status",
			"prober detected unhealthy status heldBack=1",
			"waiting for ReadIndex response took too long, retrying heldBack=2",
		},
	}, {
		name:  "written again after a quiet interval, without a count",
		steps: []step{{log: retry, advance: time.Minute}, {log: retry}},
		want: []string{
			"waiting for ReadIndex response took too long, retrying",
			"waiting for ReadIndex response took too long, retrying",
		},
	}, {
		name: "the same message of another logger is another message",
		steps: []step{
			{log: func(l *zap.Logger) { l.Named("etcd-client").Warn("retrying of unary invoker failed") }},
			{log: func(l *zap.Logger) { l.Named("other").Warn("retrying of unary invoker failed") }},
			{log: func(l *zap.Logger) { l.Named("etcd-client").Warn("retrying of unary invoker failed") }},
		},
		want: []string{"retrying of unary invoker failed", "retrying of unary invoker failed"},
	}, {
		name: "children derived with With share the count",
		steps: []step{
			{log: func(l *zap.Logger) {
				l.With(zap.String("member", "a")).Warn("lost TCP streaming connection with remote peer")
			}},
			{log: func(l *zap.Logger) {
				l.With(zap.String("member", "b")).Warn("lost TCP streaming connection with remote peer")
			}},
		},
		want: []string{"lost TCP streaming connection with remote peer"},
	}, {
		name: "entries above error are never held back",
		steps: []step{
			{log: func(l *zap.Logger) { l.Error("failed to save Raft hard state and entries") }},
			{log: func(l *zap.Logger) { l.DPanic("failed to save Raft hard state and entries") }},
		},
		want: []string{"failed to save Raft hard state and entries", "failed to save Raft hard state and entries"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			inner, logs := observer.New(zapcore.InfoLevel)
			clock := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			logger := zap.New(newCore(inner, time.Minute, clock))
			for _, s := range tc.steps {
				s.log(logger)
				clock.SetTime(clock.Now().Add(s.advance))
			}
			var got []string
			for _, e := range logs.All() {
				line := e.Message
				if held, ok := e.ContextMap()[HeldBackKey]; ok {
					line += fmt.Sprintf(" %s=%v", HeldBackKey, held)
				}
				got = append(got, line)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("written:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The wrapped core's level applies: an entry it does not take is neither
// written nor counted.
func TestCoreKeepsTheWrappedLevel(t *testing.T) {
	inner, logs := observer.New(zapcore.WarnLevel)
	logger := zap.New(NewCore(inner, time.Minute))
	logger.Info("below the level")
	logger.Warn("below the level")
	if got := logs.Len(); got != 1 || logs.All()[0].Level != zapcore.WarnLevel {
		t.Errorf("written %v, want the warning alone", logs.All())
	}
}
