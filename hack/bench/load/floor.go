package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"

	embeddedetcd "sigs.k8s.io/sample-generic-controlplane/embedded-etcd"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// embeddedFloor starts a member as the binary embeds it, in this process,
// and measures create transactions through its unix socket.
func embeddedFloor(dir string, o options) (float64, error) {
	s, err := embeddedetcd.Start(context.Background(), embeddedetcd.Config{
		DataDir:    filepath.Join(dir, "etcd"),
		SocketPath: filepath.Join(dir, "run", "etcd.sock"),
		LogLevel:   "error",
	})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.WaitReady(context.Background()); err != nil {
		return 0, err
	}
	return createTxns(s.ClientURL(), o)
}

// processFloor starts etcd as the anchor runs it and measures create
// transactions over loopback TCP.
func processFloor(etcd, dir string, o options) (float64, error) {
	ports := make([]int, 2)
	for i := range ports {
		var err error
		if ports[i], err = benchutil.FreePort(); err != nil {
			return 0, err
		}
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	p, err := benchutil.Start(etcd, benchutil.EtcdArgs(filepath.Join(dir, "etcd"), clientURL, peerURL), filepath.Join(dir, "etcd.log"))
	if err != nil {
		return 0, err
	}
	defer p.Stop() //nolint:errcheck
	return createTxns(clientURL, o)
}

// createTxns writes storedConfigMap under fresh keys from o.clients
// goroutines for o.duration, the way the API server's etcd3 store creates:
// put the key if its mod revision is 0, else read it. It returns the
// transactions per second.
func createTxns(endpoint string, o options) (float64, error) {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, err
	}
	defer client.Close() //nolint:errcheck
	ctx := context.Background()
	// Wait for the member to serve: the etcd process may still be starting.
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := client.Get(attempt, "/registry/health")
		return err == nil, nil
	}); err != nil {
		return 0, fmt.Errorf("etcd at %s does not serve: %w", endpoint, err)
	}
	value, err := storedConfigMap()
	if err != nil {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		count atomic.Int64
		first atomic.Pointer[error]
	)
	start := time.Now()
	deadline := start.Add(o.duration)
	for i := range o.clients {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				key := fmt.Sprintf("/registry/configmaps/bench-floor/c%d-%d", i, n)
				resp, err := client.Txn(ctx).
					If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, string(value))).
					Else(clientv3.OpGet(key)).Commit()
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("%s exists", key)
				}
				if err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return 0, *err
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}

// storedConfigMap is a ConfigMap with the payload as the API server stores
// it: protobuf, with the metadata a create fills in.
func storedConfigMap() ([]byte, error) {
	now := metav1.Now()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: "c0-0", Namespace: "bench-creates", UID: types.UID("5b3c7c1e-2f0d-4a53-9a43-8d1b6b0c9e21"),
			CreationTimestamp: now,
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "load", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:config.yaml":{}}}`)},
			}},
		},
		Data: payload,
	}
	encoder := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	var buf bytes.Buffer
	if err := encoder.Encode(cm, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
