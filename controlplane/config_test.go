package controlplane

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

// The embedded etcd starts while the API servers are configured. When the
// configuration fails, the error is the configuration's (not the member's
// start being called off), and nothing is left behind: the member's socket
// and the port are closed, and the data dir can be taken again at once.
func TestServeConfigFailureStopsEmbeddedEtcd(t *testing.T) {
	o := NewOptions()
	o.DataDir = t.TempDir()
	o.Resources = func() *serverstorage.ResourceConfig {
		r := DefaultResources()
		r.DisableResources(corev1.SchemeGroupVersion.WithResource("secrets"))
		return r
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.ControlPlane.SecureServing.Listener = listener
	o.ControlPlane.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port

	if err := Serve(t.Context(), o, nil); err == nil || !strings.Contains(err.Error(), "the API server itself needs secrets.v1") {
		t.Fatalf("Serve: %v, want the configuration's error about secrets", err)
	}
	socket := filepath.Join(o.DataDir, "run", "etcd.sock")
	if conn, err := net.Dial("unix", socket); err == nil {
		conn.Close() //nolint:errcheck
		t.Errorf("the embedded etcd still listens on %s", socket)
	}
	if conn, err := net.Dial("tcp", listener.Addr().String()); err == nil {
		conn.Close() //nolint:errcheck
		t.Errorf("%s still accepts connections", listener.Addr())
	}
	d, err := o.PrepareDataDir(t.Context())
	if err != nil {
		t.Fatalf("the data dir is still taken: %v", err)
	}
	d.Close()
}

// NewConfig serves on the port Listen bound, and on the member StartEtcd
// started; without them, it says so.
func TestNewConfigNeedsListenAndEtcd(t *testing.T) {
	o := NewOptions()
	o.DataDir = t.TempDir()
	o.ControlPlane.SecureServing.BindPort = 0 // a free port
	d, err := o.PrepareDataDir(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	completed, err := o.Complete(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewConfig(t.Context(), completed, nil); err == nil || !strings.Contains(err.Error(), "call CompletedOptions.Listen") {
		t.Errorf("NewConfig without Listen: %v, want an error naming Listen", err)
	}
	listener, err := completed.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	if _, err := NewConfig(t.Context(), completed, nil); err == nil || !strings.Contains(err.Error(), "CompletedOptions.StartEtcd") {
		t.Errorf("NewConfig of an embedded etcd without the member: %v, want an error naming StartEtcd", err)
	}
}
