package testenv

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// emptyTempDir points $TMPDIR, where Start creates the server's work dir,
// at a new directory, and returns a check that it is empty again.
// (t.Setenv: such a test cannot run in parallel with others.)
func emptyTempDir(t *testing.T) (checkEmpty func()) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return func() {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("%s is left in $TMPDIR", e.Name())
		}
	}
}

// Stop leaves no process and no file behind, and may be called again.
func TestStopLeavesNothingBehind(t *testing.T) {
	checkEmpty := emptyTempDir(t)
	s, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := s.process.cmd.Process.Pid
	if _, err := os.Stat(filepath.Join(s.DataDir, "pki", "ca.crt")); err != nil {
		t.Errorf("the data dir holds no CA while the server runs: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("Stop again: %v", err)
	}
	// The process was waited for, so its pid names no process, not even a zombie.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server's process %d after Stop: kill -0 says %v, want no such process", pid, err)
	}
	checkEmpty()
}

// A DataDir given in Options outlives Stop, and a server started on it
// again serves what the first one stored.
func TestStopKeepsAGivenDataDir(t *testing.T) {
	checkEmpty := emptyTempDir(t)
	t.Chdir(t.TempDir())
	dataDir, err := filepath.Abs("data")
	if err != nil {
		t.Fatal(err)
	}
	first, err := Start(t.Context(), Options{DataDir: "data"}) // relative to the test's directory
	if err != nil {
		t.Fatal(err)
	}
	if first.DataDir != dataDir || first.KubeconfigPath != filepath.Join(dataDir, "admin.kubeconfig") {
		t.Errorf("DataDir %s and KubeconfigPath %s, want %s and admin.kubeconfig in it", first.DataDir, first.KubeconfigPath, dataDir)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if _, err := kubernetes.NewForConfigOrDie(first.ClientConfig).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	checkEmpty()

	second := StartTestServer(t, Options{DataDir: dataDir})
	if second.DataDir != dataDir {
		t.Errorf("DataDir = %s, want %s", second.DataDir, dataDir)
	}
	if _, err := kubernetes.NewForConfigOrDie(second.ClientConfig).CoreV1().ConfigMaps("default").Get(t.Context(), cm.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the restarted server on the same data dir: %v", err)
	}
}

// What fails before the server is ready says why, and leaves nothing.
func TestStartFailures(t *testing.T) {
	noBinaryHere := t.TempDir()
	for _, tc := range []struct {
		name string
		opts Options
		env  map[string]string
		// want are substrings of the error.
		want []string
		is   error
	}{
		{
			name: "no binary anywhere",
			env:  map[string]string{EnvBinary: "", "PATH": noBinaryHere},
			want: []string{"Options.Binary is empty, $SGCP_BINARY is not set, and there is none on $PATH",
				"`make build` in a checkout of sigs.k8s.io/sample-generic-controlplane and set SGCP_BINARY=<checkout>/bin/sample-generic-controlplane",
				"or put the sample-generic-controlplane of a release archive on $PATH"},
			is: ErrNoBinary,
		},
		{
			name: "SGCP_BINARY names nothing",
			env:  map[string]string{EnvBinary: filepath.Join(noBinaryHere, "sample-generic-controlplane")},
			want: []string{"$SGCP_BINARY: ", "no such file or directory", "`make build` in a checkout"},
		},
		{
			name: "Options.Binary names nothing",
			opts: Options{Binary: filepath.Join(noBinaryHere, "sgcp")},
			want: []string{"Options.Binary: ", "no such file or directory"},
		},
		{
			name: "the binary exits at once",
			opts: Options{Flags: []string{"--no-such-flag"}},
			want: []string{"exited (exit status 1) before it was ready; its stderr ended with:\n", "unknown flag: --no-such-flag"},
		},
		{
			name: "a CRD path that does not exist",
			opts: Options{CRDPaths: []string{"install/testdata/missing"}},
			want: []string{`Options.CRDPaths: "install/testdata/missing" does not exist`},
		},
		{
			name: "--data-dir in Flags",
			opts: Options{Flags: []string{"--data-dir=/var/lib/elsewhere"}},
			want: []string{`Options.Flags: "--data-dir=/var/lib/elsewhere": set Options.DataDir instead`},
		},
		{
			name: "SGCP_ATTACH_OUTPUT not a boolean",
			env:  map[string]string{EnvAttachOutput: "yes please"},
			want: []string{`$SGCP_ATTACH_OUTPUT="yes please": write true or false`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkEmpty := emptyTempDir(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			s, err := Start(t.Context(), tc.opts)
			if err == nil {
				s.Stop() //nolint:errcheck // the test has failed already
				t.Fatal("Start succeeded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Start: %v\nwant it to contain %q", err, want)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Start: %v, want it to wrap %v", err, tc.is)
			}
			checkEmpty()
		})
	}
}

func TestFindBinary(t *testing.T) {
	dir := t.TempDir()
	onPath, named, notExecutable := filepath.Join(dir, BinaryName), filepath.Join(dir, "sgcp-named"), filepath.Join(dir, "sgcp-data")
	for _, f := range []string{onPath, named} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(notExecutable, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		option, envVar string
		want           string
		wantErr        string
	}{
		{name: "Options.Binary first", option: named, envVar: notExecutable, want: named},
		{name: "then $SGCP_BINARY", envVar: named, want: named},
		{name: "then $PATH", want: onPath},
		{name: "Options.Binary not executable", option: notExecutable, wantErr: "Options.Binary: exec: \"" + notExecutable + "\": permission denied"},
		{name: "$SGCP_BINARY not executable", envVar: notExecutable, wantErr: "$SGCP_BINARY: exec: \"" + notExecutable + "\": permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", dir)
			t.Setenv(EnvBinary, tc.envVar)
			got, err := findBinary(tc.option)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("findBinary: %q, %v; want an error starting %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("findBinary: %q, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// $SGCP_ATTACH_OUTPUT=true copies the server's output to the test's.
func TestAttachOutput(t *testing.T) {
	t.Setenv(EnvAttachOutput, "true")
	// The test's stdout and stderr are pipes for as long as the server runs.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	testStdout, testStderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = stdoutW, stderrW
	restored := false
	restore := func() {
		if !restored {
			os.Stdout, os.Stderr, restored = testStdout, testStderr, true
		}
	}
	defer restore()
	stdout, stderr := make(chan string, 1), make(chan string, 1)
	for r, c := range map[*os.File]chan string{stdoutR: stdout, stderrR: stderr} {
		go func() {
			data, _ := io.ReadAll(r)
			c <- string(data)
		}()
	}

	s, err := Start(t.Context(), Options{Flags: []string{"-v=1"}})
	restore()
	if err == nil {
		err = s.Stop()
	}
	stdoutW.Close() //nolint:errcheck // ends the reader
	stderrW.Close() //nolint:errcheck
	if err != nil {
		t.Fatal(err)
	}
	if out := <-stdout; !strings.Contains(out, readyLinePrefix) {
		t.Errorf("the test's stdout did not get the server's ready line:\n%s", out)
	}
	// -v=1 logs every flag.
	if out := <-stderr; !strings.Contains(out, `FLAG: --secure-port="0"`) {
		t.Errorf("the test's stderr did not get the server's log:\n%s", out)
	}
}

// The binary runs on the server's data dir and a free port, deletes
// namespaces without a grace period, and the test's flags come last, so
// that they can set any of these back.
func TestServerArgs(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{
			name: "defaults",
			want: []string{"--data-dir=/d", "--secure-port=0", "--bind-address=127.0.0.1", "--namespace-deletion-grace-period=0"},
		},
		{
			name:  "a grace period set back",
			flags: []string{"--namespace-deletion-grace-period=5s"},
			want:  []string{"--data-dir=/d", "--secure-port=0", "--bind-address=127.0.0.1", "--namespace-deletion-grace-period=0", "--namespace-deletion-grace-period=5s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serverArgs("/d", tt.flags); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("serverArgs = %q, want %q", got, tt.want)
			}
		})
	}
}
