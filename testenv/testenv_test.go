package testenv

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The tests need the binary: $SGCP_BINARY (make test sets it) or
// sample-generic-controlplane on $PATH. Without one they fail, saying how
// to get one.

func TestStartServesTheAPI(t *testing.T) {
	t.Parallel()
	s := StartTestServer(t, Options{})
	if s.ClientConfig.QPS != -1 {
		t.Errorf("ClientConfig.QPS = %v, want -1: tests are not throttled client-side", s.ClientConfig.QPS)
	}
	if want := filepath.Join(s.DataDir, "admin.kubeconfig"); s.KubeconfigPath != want {
		t.Errorf("KubeconfigPath = %s, want %s", s.KubeconfigPath, want)
	}
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns.Name).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "greeting"}, Data: map[string]string{"hello": "world"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a config map: %v", err)
	}
}

// Parallel tests each get a server of their own, on a port of its own.
func TestParallelTestsHaveServersOfTheirOwn(t *testing.T) {
	t.Parallel()
	const servers = 4
	var (
		mu    sync.Mutex
		hosts = map[string]int{}
	)
	t.Run("servers", func(t *testing.T) {
		for i := range servers {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				s := StartTestServer(t, Options{})
				// The same name in every server: none sees another's.
				client := kubernetes.NewForConfigOrDie(s.ClientConfig)
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}
				if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating namespace mine: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				hosts[s.ClientConfig.Host] = i
			})
		}
	})
	if len(hosts) != servers {
		t.Errorf("%d servers served on %d URLs: %v", servers, len(hosts), hosts)
	}
	for host := range hosts {
		if u, err := url.Parse(host); err != nil || u.Hostname() != "127.0.0.1" {
			t.Errorf("a server serves on %s, want 127.0.0.1", host)
		}
	}
}

// The controllers run: the garbage collector deletes what an owner's
// deletion leaves behind, and a deleted namespace goes with its objects.
func TestGarbageCollectionAndNamespaceDeletion(t *testing.T) {
	t.Parallel()
	s := StartTestServer(t, Options{})
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(s.ClientConfig)
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owners"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMaps := client.CoreV1().ConfigMaps(ns.Name)
	owner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
	}}}}
	if _, err := configMaps.Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the garbage collector deletes the owned config map", func(ctx context.Context) error {
		_, err := configMaps.Get(ctx, owned.Name, metav1.GetOptions{})
		return err
	})

	if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "left"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "the namespace controller empties and removes the namespace", func(ctx context.Context) error {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return err
	})
}

// waitGone waits until get returns NotFound, at most a minute.
func waitGone(t *testing.T, what string, get func(context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
