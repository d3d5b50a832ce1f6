package sdnotify

import (
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/sdnotify/sdnotifytest"
)

func TestFromEnvironment(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	cases := []struct {
		name         string
		env          map[string]string
		wantNotifier bool
		wantWatchdog time.Duration
		wantErr      bool
	}{
		{name: "a plain start", env: map[string]string{}},
		{name: "Type=notify", env: map[string]string{"NOTIFY_SOCKET": "SOCKET"}, wantNotifier: true},
		{name: "WatchdogSec=", env: map[string]string{"NOTIFY_SOCKET": "SOCKET", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": self}, wantNotifier: true, wantWatchdog: 30 * time.Second},
		{name: "WatchdogSec= without a PID", env: map[string]string{"NOTIFY_SOCKET": "SOCKET", "WATCHDOG_USEC": "2000000"}, wantNotifier: true, wantWatchdog: 2 * time.Second},
		{name: "a watchdog for another process", env: map[string]string{"NOTIFY_SOCKET": "SOCKET", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, wantNotifier: true},
		{name: "a bad interval", env: map[string]string{"NOTIFY_SOCKET": "SOCKET", "WATCHDOG_USEC": "30s"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			socket, received := sdnotifytest.Listen(t, t.TempDir())
			for _, name := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
				value, ok := tc.env[name]
				if value == "SOCKET" {
					value = socket
				}
				t.Setenv(name, value)
				if !ok {
					os.Unsetenv(name) //nolint:errcheck
				}
			}
			n, err := FromEnvironment()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			for _, name := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
				if value, ok := os.LookupEnv(name); ok {
					t.Errorf("$%s is still %q: children and upstream's API server would see it", name, value)
				}
			}
			if (n != nil) != tc.wantNotifier {
				t.Fatalf("notifier %v, want one: %v", n, tc.wantNotifier)
			}
			if n == nil {
				return
			}
			if n.Watchdog() != tc.wantWatchdog {
				t.Errorf("watchdog interval %s, want %s", n.Watchdog(), tc.wantWatchdog)
			}
			// Each notification is one datagram, in the order sent.
			n.Status("Waiting for etcd")
			n.Ready()
			n.Alive()
			n.Stopping()
			for _, want := range []string{"STATUS=Waiting for etcd", "READY=1\nSTATUS=Serving", "WATCHDOG=1", "STOPPING=1\nSTATUS=Stopping"} {
				select {
				case got := <-received:
					if got != want {
						t.Errorf("received %q, want %q", got, want)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("received nothing within 10s, want %q", want)
				}
			}
		})
	}
}
