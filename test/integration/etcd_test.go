package integration

import (
	"os"
	"path/filepath"
	"testing"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
)

// startEtcd starts an etcd member that outlives the test's control planes
// (it is cleaned up after them) and returns its client socket, for
// --etcd-servers=unix://<socket>.
func startEtcd(t *testing.T) string {
	t.Helper()
	socket := filepath.Join(shortTempDir(t), "etcd.sock")
	etcd, err := embeddedetcd.Start(embeddedetcd.Config{DataDir: t.TempDir(), SocketPath: socket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close) // after the servers, which are cleaned up first
	if err := etcd.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return socket
}

// shortTempDir is a private directory short enough for unix sockets, which
// t.TempDir (named after the test) may not be.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) //nolint:errcheck
	return dir
}
