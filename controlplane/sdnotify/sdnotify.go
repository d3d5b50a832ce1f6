// Package sdnotify tells systemd how the control plane is doing, by the
// protocol of sd_notify(3): a Type=notify unit learns when the server is
// ready (READY=1), what it is busy with (STATUS=), when it stops
// (STOPPING=1), and, with WatchdogSec=, that it is still live (WATCHDOG=1).
// It is a controlplane.Notifier.
//
// It sends the datagrams itself rather than through go-systemd's daemon
// package, which reads $NOTIFY_SOCKET at each call: the socket must be
// taken from the environment before the API server starts (see
// FromEnvironment).
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Notifier sends notifications to the socket systemd named.
type Notifier struct {
	socket   string
	watchdog time.Duration

	// mu keeps one message whole after another.
	mu sync.Mutex
}

// FromEnvironment returns the notifier of $NOTIFY_SOCKET, with the
// watchdog interval of $WATCHDOG_USEC (when $WATCHDOG_PID, if set, is this
// process), or nil when systemd asked for no notifications: a plain start.
//
// It unsets the variables, as sd_notify's unset_environment does, so that
// children do not inherit them and so that upstream's API server, which
// sends READY=1 itself as soon as its post-start hooks start (before
// /readyz says ok), finds no socket: READY=1 is the control plane's to
// send.
func FromEnvironment() (*Notifier, error) {
	socket := os.Getenv("NOTIFY_SOCKET")
	usec, pid := os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID")
	for _, name := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		os.Unsetenv(name) //nolint:errcheck // fails only on an invalid name
	}
	if socket == "" {
		return nil, nil
	}
	n := &Notifier{socket: socket}
	if usec != "" && (pid == "" || pid == strconv.Itoa(os.Getpid())) {
		us, err := strconv.ParseInt(usec, 10, 64)
		if err != nil || us <= 0 {
			return nil, fmt.Errorf("$WATCHDOG_USEC is %q: want a positive number of microseconds (systemd sets it from WatchdogSec=)", usec)
		}
		n.watchdog = time.Duration(us) * time.Microsecond
	}
	return n, nil
}

// Status says what the server is busy with (systemctl status shows it).
func (n *Notifier) Status(status string) { n.send("STATUS=" + status) }

// Ready says the server serves.
func (n *Notifier) Ready() { n.send("READY=1\nSTATUS=Serving") }

// Stopping says a stop has begun.
func (n *Notifier) Stopping() { n.send("STOPPING=1\nSTATUS=Stopping") }

// Watchdog is the interval within which systemd wants to hear Alive, zero
// without WatchdogSec=.
func (n *Notifier) Watchdog() time.Duration { return n.watchdog }

// Alive resets systemd's watchdog timer.
func (n *Notifier) Alive() { n.send("WATCHDOG=1") }

// send writes one datagram. A notification that cannot be sent is logged,
// not returned: the server runs on, as systemd would see it anyway.
func (n *Notifier) send(state string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.write(state); err != nil {
		klog.Background().Error(err, "Cannot notify systemd", "state", strings.ReplaceAll(state, "\n", " "))
	}
}

func (n *Notifier) write(state string) error {
	// An abstract socket's name begins with "@", which Go's net maps to
	// the leading NUL byte of the kernel's name, as systemd means it.
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("connecting to $NOTIFY_SOCKET %s: %w", n.socket, err)
	}
	defer conn.Close() //nolint:errcheck // nothing buffered
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("writing to $NOTIFY_SOCKET %s: %w", n.socket, err)
	}
	return nil
}
