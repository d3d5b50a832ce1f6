// Package sdnotifytest listens for notifications as systemd does, for the
// tests of a program that sends them (sdnotify).
package sdnotifytest

import (
	"net"
	"path/filepath"
	"testing"
)

// Listen listens on a unixgram socket in dir, as systemd does for a
// Type=notify unit, until the test ends. It returns the socket's path, for
// $NOTIFY_SOCKET, and each datagram received, in order.
func Listen(t testing.TB, dir string) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() }) //nolint:errcheck // ends the reader
	received := make(chan string, 1000)
	go func() {
		defer close(received)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			received <- string(buf[:n])
		}
	}()
	return path, received
}
