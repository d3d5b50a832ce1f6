package controlplane

import (
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
)

// The embedded etcd starts while the API servers are configured. When the
// configuration fails, the error is the configuration's (not the member's
// start being called off), and no member is left behind: its socket is
// closed and the data dir can be locked again at once.
func TestNewServerConfigFailureStopsEmbeddedEtcd(t *testing.T) {
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

	completed, err := o.Complete(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	socket := completed.EtcdSocket
	if _, err := NewServer(t.Context(), completed); err == nil || !strings.Contains(err.Error(), "the API server itself needs secrets.v1") {
		t.Fatalf("NewServer: %v, want the configuration's error about secrets", err)
	}
	if conn, err := net.Dial("unix", socket); err == nil {
		conn.Close() //nolint:errcheck
		t.Errorf("the embedded etcd still listens on %s", socket)
	}
	lock, err := lockDataDir(completed.DataDir)
	if err != nil {
		t.Fatalf("the data dir is still locked: %v", err)
	}
	lock.release()
}
