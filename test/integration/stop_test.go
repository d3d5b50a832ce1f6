package integration

import (
	"context"
	"net"
	"net/http/httptrace"
	"net/url"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"sigs.k8s.io/sample-generic-controlplane/controlplane"
	cptesting "sigs.k8s.io/sample-generic-controlplane/controlplane/testing"
	"sigs.k8s.io/sample-generic-controlplane/kana"
	"sigs.k8s.io/sample-generic-controlplane/test/internal/controllerslease"
)

// stopBudget is how long a stop may take whatever etcd's state.
const stopBudget = 15 * time.Second

// A replica whose etcd stops answering (a cluster that lost quorum: requests
// hang, connections stay open) still stops within stopBudget, leading the
// controllers and with a request in flight, and leaves neither its port nor
// its data dir taken.
func TestStopIsBoundedWhenEtcdHangs(t *testing.T) {
	proxy := startFreezableProxy(t, startEtcd(t))
	s, err := cptesting.Start(t.Context(), t.TempDir, cptesting.Options{Customize: kana.Install, Flags: []string{"--etcd-servers=unix://" + proxy.Socket}})
	if err != nil {
		t.Fatal(err)
	}
	stopping := false
	t.Cleanup(func() {
		if !stopping { // a failure before the stop
			s.Stop() //nolint:errcheck
		}
	})
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	controllerslease.WaitForHolder(t, client, "", wait.ForeverTestTimeout)
	waitControllersRun(t, s)

	proxy.Freeze()
	// A request that reaches etcd hangs: the drain has it to wait for.
	sent := make(chan struct{})
	var once sync.Once
	trace := httptrace.WithClientTrace(context.WithoutCancel(t.Context()), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(sent) }) },
	})
	inFlight := make(chan error, 1)
	go func() {
		_, err := client.CoreV1().ConfigMaps("default").Create(trace, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-flight"}}, metav1.CreateOptions{})
		inFlight <- err
	}()
	select {
	case <-sent:
	case err := <-inFlight:
		t.Fatalf("the request did not hang: %v", err)
	}

	stopping = true
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	select {
	case err := <-stopped:
		// With etcd gone, upstream's stop does not finish (its identity
		// lease controller waits for etcd) and Stop says so.
		t.Logf("stopped in %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(stopBudget):
		t.Fatalf("still stopping %s after the stop began", stopBudget)
	}
	select {
	case err := <-inFlight:
		if err == nil {
			t.Error("the request in flight succeeded, though etcd never answered")
		}
	case <-time.After(time.Second):
		t.Error("the request in flight had no answer after the server stopped")
	}

	// The port is free and the data dir unlocked: the replica can start again.
	u, err := url.Parse(s.ClientConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		conn.Close() //nolint:errcheck
		t.Errorf("%s still accepts connections", u.Host)
	}
	o := controlplane.NewOptions()
	o.DataDir = s.DataDir
	o.ControlPlane.Etcd.StorageConfig.Transport.ServerList = []string{"unix://" + proxy.Socket}
	dataDir, err := o.PrepareDataDir(t.Context())
	if err != nil {
		t.Fatalf("the data dir is still taken: %v", err)
	}
	dataDir.Close()
}

// waitControllersRun waits until the leader's controllers have all started:
// the root CA publisher, started after every other but the allocator, has
// published the CA in a new namespace.
func waitControllersRun(t *testing.T, s *cptesting.TestServer) {
	t.Helper()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	newNamespace(t, client, "controllers-run")
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ConfigMaps("controllers-run").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("controllers not running: %v", err)
	}
}

// A stop with a watch open (kubectl get -w, an informer) ends the watch and
// takes about as long as one without, not until the HTTP server's shutdown
// gives up on the connection.
func TestStopEndsWatches(t *testing.T) {
	s := cptesting.StartTestServer(t, cptesting.Options{Customize: kana.Install})
	w, err := kubernetes.NewForConfigOrDie(s.ClientConfig).CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stopping with a watch open took %s", took.Round(time.Millisecond))
	}
	select {
	case _, open := <-w.ResultChan():
		if open {
			t.Error("the watch got an event instead of its end")
		}
	case <-time.After(time.Second):
		t.Error("the watch is still open after the server stopped")
	}
}
