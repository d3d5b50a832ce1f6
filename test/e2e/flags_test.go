package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Invalid flags make the binary exit at once with one line that names the
// flag, not a stack trace.
func TestInvalidFlagsFailFast(t *testing.T) {
	const timeout = 30 * time.Second
	for _, tc := range []struct {
		name string
		// spec returns what to start; it may prepare files and listeners.
		spec func(t *testing.T) Spec
		// want are the strings the last line of stderr must contain.
		want []string
	}{
		{
			name: "etcd server is not a URL",
			spec: func(*testing.T) Spec { return Spec{Flags: []string{"--etcd-servers=::bad"}} },
			want: []string{"--etcd-servers"},
		},
		{
			name: "data dir below a regular file",
			spec: func(t *testing.T) Spec {
				file := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(file, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				return Spec{DataDir: filepath.Join(file, "sub")}
			},
			want: []string{"--data-dir"},
		},
		{
			name: "secure port in use",
			spec: func(t *testing.T) Spec {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() }) //nolint:errcheck
				return Spec{Port: l.Addr().(*net.TCPAddr).Port}
			},
			want: []string{"--secure-port", "address already in use"},
		},
		{
			name: "negative etcd quota",
			spec: func(*testing.T) Spec { return Spec{Flags: []string{"--embedded-etcd-quota-bytes=-1"}} },
			want: []string{"--embedded-etcd-quota-bytes"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			exit := startExpectingFailure(t, tc.spec(t), timeout)
			if exit.Code == 0 {
				t.Errorf("exit code 0, want non-zero")
			}
			last := exit.LastStderrLine()
			if !strings.HasPrefix(last, "Error: ") {
				t.Errorf("last line of stderr is %q, want it to start with \"Error: \"", last)
			}
			for _, want := range tc.want {
				if !strings.Contains(last, want) {
					t.Errorf("last line of stderr is %q, want it to mention %q", last, want)
				}
			}
			if strings.Contains(exit.Stderr, "goroutine ") {
				t.Errorf("stderr holds a stack trace:\n%s", tail(exit.Stderr, logTailLines))
			}
			if t.Failed() {
				t.Logf("command: %s", exit.Command)
			}
		})
	}
}
