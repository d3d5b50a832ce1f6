//go:build e2e && linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// fullFilesystemSize holds a new data dir (etcd preallocates its first
	// WAL file, 64 MB) and a few dozen of the config maps below.
	fullFilesystemSize = "96m"
	// fillerSize is what the user frees once the filesystem is full.
	fillerSize = 16 << 20
	// fullValue is the size of each config map's value: big enough to fill
	// the filesystem in a few dozen writes, well below etcd's request limit.
	fullValue = 700 << 10
	// maxFullWrites bounds the writes: the filesystem is full long before.
	maxFullWrites = 200
)

// When the filesystem of the data dir fills up, the embedded etcd member
// stops the server, whose last line says so and what to do; once space is
// freed, the server starts again with every write it acknowledged.
func TestFaultDataDirFilesystemFull(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+fullFilesystemSize); err != nil {
		t.Skipf("this spec fills a tmpfs of its own, and mounting one needs CAP_SYS_ADMIN: %v", err)
	}
	// Cleanups run last first: this one after the control plane's.
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", mnt, err)
		}
	})
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, fillerSize), 0o600); err != nil {
		t.Fatal(err)
	}

	c := startCluster(t, Spec{DataDir: filepath.Join(mnt, "data")})
	cms := clientset(t, c).CoreV1().ConfigMaps("default")
	value := strings.Repeat("x", fullValue)
	var acknowledged []string
	var lastErr error
	for i := range maxFullWrites {
		name := fmt.Sprintf("full-%03d", i)
		ctx, cancel := context.WithTimeout(t.Context(), writeTimeout)
		_, lastErr = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"value": value}}, metav1.CreateOptions{})
		cancel()
		if lastErr != nil {
			break
		}
		acknowledged = append(acknowledged, name)
	}
	if lastErr == nil {
		t.Fatalf("%d writes of %d KiB succeeded on a filesystem of %s", maxFullWrites, fullValue>>10, fullFilesystemSize)
	}
	t.Logf("%d writes acknowledged; the next failed: %v", len(acknowledged), lastErr)

	r := c.impl.(*binaryRun)
	select {
	case <-r.done:
	case <-time.After(stopTimeout):
		t.Fatalf("the server still runs %s after a write failed on its full filesystem", stopTimeout)
	}
	exit := r.exitError(c)
	last := exit.LastStderrLine()
	t.Logf("exit code %d; last line: %s", exit.Code, last)
	if exit.Code == 0 {
		t.Errorf("the server exited with code 0 on a full filesystem")
	}
	for _, says := range []string{"data dir's filesystem is full", "Free space", "acknowledged is kept", c.DataDir} {
		if !strings.Contains(last, says) {
			t.Errorf("the server's last line does not say %q: %s", says, last)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Not Restart: that stops a run first, and this one ended by itself.
	if err := provider.(*binaryProvider).launch(t.Context(), c); err != nil {
		t.Fatalf("starting again once space was freed: %v", err)
	}
	list, err := clientset(t, c).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, cm := range list.Items {
		stored[cm.Name] = len(cm.Data["value"]) == fullValue
	}
	for _, name := range acknowledged {
		if !stored[name] {
			t.Errorf("config map %s, acknowledged before the filesystem was full, is missing or cut short after the restart", name)
		}
	}
}
