package app

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
)

func init() {
	// Every case runs the command in this one process; applying the same
	// logging configuration again must not be an error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// execute runs the command with args and returns its error and output.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	// Nothing here may start a server: bound the run in case one does.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if ctx.Err() != nil {
		t.Fatalf("command %q ran until its context ended: a server started (err %v)", args, err)
	}
	return out.String(), err
}

func TestBadArgumentsFailBeforeAnythingStarts(t *testing.T) {
	regularFile := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(regularFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		// wantErr are substrings of the error.
		wantErr []string
	}{
		{name: "etcd server not a URL", args: []string{"--etcd-servers=::bad"}, wantErr: []string{"--etcd-servers", "::bad", "write e.g."}},
		{name: "etcd server with another scheme", args: []string{"--etcd-servers=https://127.0.0.1:2379,ftp://x"}, wantErr: []string{"--etcd-servers", "ftp://x"}},
		{name: "zero quota", args: []string{"--embedded-etcd-quota-bytes=0"}, wantErr: []string{"--embedded-etcd-quota-bytes", "write e.g."}},
		{name: "quota not a number", args: []string{"--embedded-etcd-quota-bytes=lots"}, wantErr: []string{"embedded-etcd-quota-bytes", "lots"}},
		{name: "snapshot schedule not cron", args: []string{"--embedded-etcd-snapshot-schedule=twice a day"}, wantErr: []string{"--embedded-etcd-snapshot-schedule", "twice a day", "write a cron schedule"}},
		{name: "snapshot retention zero", args: []string{"--embedded-etcd-snapshot-retention=0"}, wantErr: []string{"--embedded-etcd-snapshot-retention", "write e.g."}},
		{name: "tls-san not a name", args: []string{"--tls-san=bad name!"}, wantErr: []string{"--tls-san", "bad name!", "write e.g."}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: []string{"unknown flag", "--no-such-flag"}},
		{name: "positional argument", args: []string{"serve"}, wantErr: []string{`"serve"`}},
		{name: "secure port not a number", args: []string{"--secure-port=https"}, wantErr: []string{"secure-port", "https"}},
		{name: "empty data dir", args: []string{"--data-dir="}, wantErr: []string{"--data-dir", "write e.g."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"--data-dir=" + dataDir}, tc.args...)
			out, err := execute(t, args...)
			if err == nil {
				t.Fatalf("command %q succeeded; output:\n%s", args, out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if _, statErr := os.Stat(dataDir); !os.IsNotExist(statErr) {
				t.Errorf("data dir %s exists after a failure about flags (%v)", dataDir, statErr)
			}
		})
	}

	t.Run("data dir under a regular file", func(t *testing.T) {
		dataDir := filepath.Join(regularFile, "sub")
		_, err := execute(t, "--data-dir="+dataDir)
		if err == nil {
			t.Fatal("command succeeded")
		}
		for _, want := range []string{"--data-dir", dataDir, "not a directory"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
	})
}

func TestSecurePortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dataDir := filepath.Join(t.TempDir(), "data")

	_, err = execute(t, "--data-dir="+dataDir, "--secure-port="+port, "--bind-address=127.0.0.1")
	if err == nil {
		t.Fatal("command succeeded on a port in use")
	}
	for _, want := range []string{"--secure-port", port, "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// The port is checked before etcd starts, and the data dir is
	// unlocked on the way out.
	if _, err := os.Stat(filepath.Join(dataDir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("embedded etcd started although the port was in use: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("data dir still locked after the command failed: %v", err)
	}
}

// --secure-port=0 serves on a free port, and what the server prints and
// writes names that port: test launchers start the binary so, to never race
// each other for one.
func TestSecurePortZeroPicksAFreePort(t *testing.T) {
	cmd := NewCommand()
	stdout, stdoutWriter := io.Pipe()
	var stderr bytes.Buffer
	cmd.SetArgs([]string{"--data-dir=" + filepath.Join(t.TempDir(), "data"), "--secure-port=0", "--bind-address=127.0.0.1"})
	cmd.SetOut(stdoutWriter)
	cmd.SetErr(&stderr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(ctx)
		stdoutWriter.Close() //nolint:errcheck // never fails
		done <- err
	}()

	// The ready message: the API server's URL, then the kubeconfig.
	var printedURL, kubeconfig string
	lines := bufio.NewScanner(stdout)
	for kubeconfig == "" && lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "  API server: "); ok {
			printedURL = rest
		}
		if rest, ok := strings.CutPrefix(line, "  export KUBECONFIG="); ok {
			kubeconfig = rest
		}
	}
	go io.Copy(io.Discard, stdout) //nolint:errcheck // the rest, until the command returns
	if kubeconfig == "" {
		cancel()
		t.Fatalf("no ready message; the command returned %v\n%s", <-done, stderr.String())
	}
	u, err := url.Parse(printedURL)
	if err != nil || u.Port() == "" || u.Port() == "0" {
		t.Errorf("the ready message names API server %q, want the port it serves on", printedURL)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if config.Host != printedURL {
		t.Errorf("%s names server %s, the ready message %s", kubeconfig, config.Host, printedURL)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("reading kube-system through %s: %v", kubeconfig, err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("the command stopped with %v\n%s", err, stderr.String())
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// A test binary records no module dependencies, so the Kubernetes
	// version may read "unknown" here; etcd's comes from its own package.
	for i, prefix := range []string{"sample-generic-controlplane: ", "kubernetes: ", "etcd: 3.", "go: go1."} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], prefix) || len(strings.TrimSpace(lines[i])) <= len(prefix) {
			t.Errorf("line %d of version output does not start with %q and a version:\n%s", i+1, prefix, out)
		}
	}

	if _, err := execute(t, "version", "extra"); err == nil {
		t.Error("version with an argument succeeded")
	}
}

func TestHelpListsOurFlagsAndCommands(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"--data-dir", "--tls-san", "--embedded-etcd-quota-bytes", "--etcd-servers", "--secure-port",
		"--embedded-etcd-snapshot-schedule", "--embedded-etcd-snapshot-retention",
		"\n  controllers ", "\n  registry ", "\n  snapshot ", "\n  version ", "\n  kubeconfig "} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not mention %s", want)
		}
	}
}
