package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/sample-generic-controlplane/controlplane/sdnotify/sdnotifytest"
)

// The binary, started as the packaged unit starts it (the packaged config
// file, with a drop-in for this test's data dir and a free port) and with
// $NOTIFY_SOCKET and $WATCHDOG_USEC as systemd sets them, tells systemd its
// phases, then READY=1 once /readyz says ok and only then, then pings the
// watchdog while it is live, and says STOPPING=1 when SIGTERM stops it,
// after which it pings no more.
func TestSystemdNotify(t *testing.T) {
	bp := provider.(*binaryProvider)
	dir := t.TempDir()
	socket, received := sdnotifytest.Listen(t, dir)

	packaged, err := os.ReadFile(filepath.Join("..", "..", "hack", "packaging", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	dataDir := filepath.Join(dir, "data")
	writeTestFile(t, config, string(packaged))
	writeTestFile(t, filepath.Join(dir, "config.yaml.d", "90-test.yaml"), "data-dir: "+dataDir+"\nsecure-port: 0\n")

	cmd := exec.Command(bp.binary, "--config="+config)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+socket, "WATCHDOG_USEC=1000000")
	done := startBackground(t, "server", cmd)

	var seen []string
	// next returns the next notification, within timeout.
	next := func(want string, timeout time.Duration) string {
		t.Helper()
		select {
		case n := <-received:
			seen = append(seen, n)
			return n
		case err := <-done:
			done <- err
			t.Fatalf("the server exited (%v) before it sent %s; it sent %q", err, want, seen)
		case <-time.After(timeout):
			t.Fatalf("no %s within %s; the server sent %q", want, timeout, seen)
		}
		return ""
	}

	// The phases, then READY=1, once.
	for {
		n := next("READY=1", readyTimeout)
		if n == "WATCHDOG=1" {
			t.Fatalf("a watchdog ping before READY=1; the server sent %q", seen)
		}
		if strings.Contains(n, "READY=1") {
			break
		}
	}
	// Upstream's API server would send a READY=1 of its own as soon as its
	// post-start hooks start: only ours may arrive, with its status.
	if got := seen[len(seen)-1]; got != "READY=1\nSTATUS=Serving" {
		t.Errorf("readiness said %q, want \"READY=1\\nSTATUS=Serving\"", got)
	}
	for _, phase := range []string{"STATUS=Waiting for etcd", "STATUS=Starting the API server"} {
		if !slices.Contains(seen, phase) {
			t.Errorf("no %q before READY=1; the server sent %q", phase, seen)
		}
	}
	if i, j := slices.Index(seen, "STATUS=Waiting for etcd"), slices.Index(seen, "STATUS=Starting the API server"); i > j {
		t.Errorf("the phases came out of order: %q", seen)
	}

	// READY=1 means /readyz says ok now.
	restConfig, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	var code int
	client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(t.Context()).StatusCode(&code)
	if code != http.StatusOK {
		t.Errorf("/readyz answered %d right after READY=1, want 200", code)
	}

	// Pings at half of WATCHDOG_USEC while live; three of them, well
	// within the time systemd would give them.
	for range 3 {
		if n := next("WATCHDOG=1", 30*time.Second); n != "WATCHDOG=1" {
			t.Fatalf("%q while serving, want watchdog pings only; the server sent %q", n, seen)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("the server after SIGTERM: %v, want exit code 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server had not stopped 30s after SIGTERM")
	}
	// The server has exited: what it sent is all in the socket, and the
	// listener's reader hands it over until it has read the last: wait
	// for a quiet second, not for an empty channel, which it may not have
	// filled yet on a loaded machine.
	stopping := false
	for {
		select {
		case n := <-received:
			seen = append(seen, n)
			switch {
			case n == "STOPPING=1\nSTATUS=Stopping":
				stopping = true
			case n == "WATCHDOG=1" && stopping:
				t.Errorf("a watchdog ping after STOPPING=1; the server sent %q", seen)
			case n != "WATCHDOG=1":
				t.Errorf("%q after READY=1; the server sent %q", n, seen)
			}
			continue
		case <-time.After(time.Second):
		}
		break
	}
	if !stopping {
		t.Errorf("no STOPPING=1 when stopped; the server sent %q", seen)
	}
}

// startBackground starts cmd, its output in a log file whose tail is
// printed if the test fails, and returns the channel its exit arrives on
// (send it back once read: the cleanup, which kills the process, reads it
// again).
func startBackground(t *testing.T, name string, cmd *exec.Cmd) chan error {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		log.Close() //nolint:errcheck
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		log.Close() //nolint:errcheck
		done <- err
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		done <- <-done
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, tail(string(data), 40))
		}
	})
	return done
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
