package logging

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	logsapi "k8s.io/component-base/logs/api/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// Lines as klog's text and JSON loggers write them.
const (
	upstreamInfo    = "I1122 23:32:49.453244   20329 shared_informer.go:409] \"Caches are synced\"\n"
	upstreamWarning = "W1122 23:32:49.453244   20329 cacher.go:184] Terminating all watchers from cacher secrets\n"
	upstreamError   = "E1122 23:35:28.000001     790 watcher.go:336] watch chan error: etcdserver: no leader\n"
	skippingAPI     = "W1122 23:32:49.453244   20329 genericapiserver.go:798] Skipping API coordination.k8s.io/v1beta1 because it has no resources.\n"
	abandonedDial   = "W1122 23:35:01.396452     790 logging.go:55] [core] [Channel #1 SubChannel #2] grpc: addrConn.createTransport failed to connect to {Addr: \"127.0.0.1:2379\", ServerName: \"127.0.0.1:2379\", }. Err: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: operation was canceled\"\n"
	refusedDial     = "W1122 23:38:04.541400    6804 logging.go:55] [core] [Channel #1 SubChannel #2] grpc: addrConn.createTransport failed to connect to {Addr: \"127.0.0.1:1\", ServerName: \"127.0.0.1:1\", }. Err: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused\"\n"
	fatal           = "F1122 23:38:04.541400    6804 server.go:10] cannot go on\n"
	notALogLine     = "panic: something\n"
	jsonInfo        = `{"ts":1795391124614.5503,"caller":"cache/shared_informer.go:409","msg":"Caches are synced","v":0}` + "\n"
	jsonError       = `{"ts":1795391125745.641,"caller":"etcd3/watcher.go:336","msg":"watch chan error: etcdserver: no leader"}` + "\n"
)

func TestFilterLeavesOutAtTheDefaultVerbosity(t *testing.T) {
	cases := []struct {
		name   string
		config logsapi.LoggingConfiguration
		own    bool // whether the entry comes from the control plane's code
		line   string
		want   bool // whether it is written
	}{
		{name: "library info", line: upstreamInfo, want: false},
		{name: "own info", own: true, line: upstreamInfo, want: true},
		{name: "library info at -v=2", config: logsapi.LoggingConfiguration{Verbosity: 2}, line: upstreamInfo, want: true},
		{name: "library info with -vmodule", config: logsapi.LoggingConfiguration{VModule: logsapi.VModuleConfiguration{{FilePattern: "reflector", Verbosity: 4}}}, line: upstreamInfo, want: true},
		{name: "library warning", line: upstreamWarning, want: true},
		{name: "library error", line: upstreamError, want: true},
		{name: "fatal", line: fatal, want: true},
		{name: "not a log line", line: notALogLine, want: true},
		{name: "version without resources", line: skippingAPI, want: false},
		{name: "version without resources at -v=2", config: logsapi.LoggingConfiguration{Verbosity: 2}, line: skippingAPI, want: true},
		{name: "connection abandoned by the etcd client", line: abandonedDial, want: false},
		{name: "connection refused by etcd", line: refusedDial, want: true},
		{name: "JSON library info", config: logsapi.LoggingConfiguration{Format: "json"}, line: jsonInfo, want: true},
		{name: "JSON error", config: logsapi.LoggingConfiguration{Format: "json"}, line: jsonError, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			f := newFilter(&out, &tc.config, clocktesting.NewFakePassiveClock(time.Now()))
			f.caller = func() (runtime.Frame, bool) {
				if tc.own {
					return runtime.Frame{Function: "sigs.k8s.io/sample-generic-controlplane/controlplane.F"}, true
				}
				return runtime.Frame{Function: "k8s.io/apiserver/pkg/server.F"}, true
			}
			n, err := f.Write([]byte(tc.line))
			if err != nil || n != len(tc.line) {
				t.Fatalf("Write: %d, %v; want %d, nil", n, err, len(tc.line))
			}
			if got := out.String() == tc.line; got != tc.want {
				t.Errorf("written %v, want %v; output %q", got, tc.want, out.String())
			}
		})
	}
}

// step is a step of a test of the repeat limit: lines written, or time
// passing (then the filter ends the periods that are over, as its ticker
// would), or the filter flushed.
type step struct {
	write   []string
	advance time.Duration
	flush   bool
}

func TestFilterCountsRepeatedEntries(t *testing.T) {
	otherError := strings.Replace(upstreamError, "watcher.go:336", "watcher.go:421", 1)
	cases := []struct {
		name   string
		format string
		steps  []step
		want   []string
	}{{
		name: "the first of a storm, then a count a period",
		steps: []step{
			{write: []string{upstreamError, upstreamError, upstreamError}},
			{advance: RepeatPeriod},
			{write: []string{upstreamError}},
			{advance: RepeatPeriod},
		},
		want: []string{
			upstreamError,
			"E1122 23:35:28.000001     790 watcher.go:336] message repeated 2 times in the last 1m0s: [ watch chan error: etcdserver: no leader ]\n",
			"E1122 23:35:28.000001     790 watcher.go:336] message repeated once in the last 1m0s: [ watch chan error: etcdserver: no leader ]\n",
		},
	}, {
		name: "written in full again after a quiet period",
		steps: []step{
			{write: []string{upstreamError}},
			{advance: RepeatPeriod},
			{write: []string{upstreamError}},
		},
		want: []string{upstreamError, upstreamError},
	}, {
		name: "no count before the period is over",
		steps: []step{
			{write: []string{upstreamError, upstreamError}},
			{advance: RepeatPeriod - time.Second},
		},
		want: []string{upstreamError},
	}, {
		name: "counted per call, interleaved with what is written through",
		steps: []step{
			{write: []string{upstreamError, otherError, upstreamInfo, upstreamError, otherError, otherError}},
			{advance: RepeatPeriod},
		},
		want: []string{
			upstreamError, otherError, upstreamInfo,
			"E1122 23:35:28.000001     790 watcher.go:336] message repeated once in the last 1m0s: [ watch chan error: etcdserver: no leader ]\n",
			"E1122 23:35:28.000001     790 watcher.go:421] message repeated 2 times in the last 1m0s: [ watch chan error: etcdserver: no leader ]\n",
		},
	}, {
		name: "the latest entry is the one counted",
		steps: []step{
			{write: []string{upstreamWarning, strings.Replace(upstreamWarning, "secrets", "configmaps", 1)}},
			{advance: RepeatPeriod},
		},
		want: []string{
			upstreamWarning,
			"W1122 23:32:49.453244   20329 cacher.go:184] message repeated once in the last 1m0s: [ Terminating all watchers from cacher configmaps ]\n",
		},
	}, {
		name: "informational messages are never counted",
		steps: []step{
			{write: []string{upstreamInfo, upstreamInfo}},
			{advance: RepeatPeriod},
		},
		want: []string{upstreamInfo, upstreamInfo},
	}, {
		name: "flushed before the period is over",
		steps: []step{
			{write: []string{upstreamError, upstreamError}},
			{advance: 10 * time.Second},
			{flush: true},
			{advance: RepeatPeriod},
		},
		want: []string{
			upstreamError,
			"E1122 23:35:28.000001     790 watcher.go:336] message repeated once in the last 10s: [ watch chan error: etcdserver: no leader ]\n",
		},
	}, {
		name:   "JSON errors",
		format: "json",
		steps: []step{
			{write: []string{jsonError, jsonError, jsonError, jsonInfo, jsonInfo}},
			{advance: RepeatPeriod},
		},
		want: []string{
			jsonError, jsonInfo, jsonInfo,
			`{"ts":1795391125745.641,"caller":"etcd3/watcher.go:336","msg":"watch chan error: etcdserver: no leader","repeated":2,"repeatedPeriod":"1m0s"}` + "\n",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := clocktesting.NewFakePassiveClock(time.Now())
			f := newFilter(&out, &logsapi.LoggingConfiguration{Format: tc.format, Verbosity: 2}, clock)
			for _, s := range tc.steps {
				for _, line := range s.write {
					if _, err := f.Write([]byte(line)); err != nil {
						t.Fatal(err)
					}
				}
				if s.advance > 0 {
					clock.SetTime(clock.Now().Add(s.advance))
					f.repeats.endPeriods()
				}
				if s.flush {
					f.Flush()
				}
			}
			if got, want := out.String(), strings.Join(tc.want, ""); got != want {
				t.Errorf("output:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A storm of one error from many goroutines, as every watch of an API
// server does when etcd loses its leader, is written once per period.
func TestFilterBoundsAStorm(t *testing.T) {
	var out bytes.Buffer
	clock := clocktesting.NewFakePassiveClock(time.Now())
	f := newFilter(&out, &logsapi.LoggingConfiguration{}, clock)
	const writers, each = 50, 2000
	done := make(chan struct{})
	for range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				if _, err := f.Write([]byte(upstreamError)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	clock.SetTime(clock.Now().Add(RepeatPeriod))
	f.repeats.endPeriods()
	want := upstreamError + "E1122 23:35:28.000001     790 watcher.go:336] message repeated 99999 times in the last 1m0s: [ watch chan error: etcdserver: no leader ]\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// The program's main package is its own code: the binary logs from there
// (the line that says it is stopping), and so may a program that embeds
// the control plane.
func TestOwnFunctions(t *testing.T) {
	for function, own := range map[string]bool{
		"main.main.func1": true,
		"sigs.k8s.io/sample-generic-controlplane/controllers/manager.Run":    true,
		"k8s.io/client-go/tools/cache.WaitForNamedCacheSync":                 false,
		"k8s.io/apiserver/pkg/server.(*GenericAPIServer).PrepareRun":         false,
		"mainframe.example.com/pkg.F":                                        false,
		"sigs.k8s.io/sample-generic-controlplane-fork/controlplane.(*S).Run": false,
	} {
		if got := isOwnFunction(function); got != own {
			t.Errorf("isOwnFunction(%q) = %v, want %v", function, got, own)
		}
	}
}

// Two packages' files of the same base name log at the same line: klog's
// text header (controller.go:201) cannot tell them apart, the calls'
// full paths can. Each error's first occurrence is written.
func TestFilterKeepsApartCallsOfTheSameBaseName(t *testing.T) {
	var out bytes.Buffer
	f := newFilter(&out, &logsapi.LoggingConfiguration{}, clocktesting.NewFakePassiveClock(time.Now()))
	lines := map[string]string{
		"/go/pkg/mod/k8s.io/component-helpers/apimachinery/lease/controller.go": "E1122 23:36:55.001621    6300 controller.go:201] \"lease error\"\n",
		"/go/pkg/mod/k8s.io/kubernetes/pkg/controller/namespace/controller.go":  "E1122 23:36:55.001700    6300 controller.go:201] \"namespace error\"\n",
	}
	for file, line := range lines {
		f.caller = func() (runtime.Frame, bool) {
			return runtime.Frame{Function: "k8s.io/x.F", File: file, Line: 201}, true
		}
		if _, err := f.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range lines {
		if !strings.Contains(out.String(), line) {
			t.Errorf("%q was held back as a repeat of another call's error; output:\n%s", line, out.String())
		}
	}
}
