// Command e2e-external runs a command (make e2e: go test on the e2e specs)
// against a control plane of its own, reached only through its kubeconfig,
// as the e2e suite's external provider reaches any cluster
// (docs/testing.md). It starts the binary on a fresh data dir and a free
// loopback port, runs the command with $SGCP_E2E_PROVIDERS=external and
// $SGCP_E2E_KUBECONFIG set, stops the control plane with SIGTERM and exits
// with the command's exit code.
//
//	go run ./hack/e2e-external -binary bin/sample-generic-controlplane -- go test ./test/e2e -run TestSpec
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readyLinePrefix starts the line the binary prints on stdout once it serves.
const readyLinePrefix = "  export KUBECONFIG="

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "the control plane binary")
	readyTimeout := flag.Duration("ready-timeout", time.Minute, "how long the control plane may take to print its kubeconfig")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "e2e-external: name the command to run after --, e.g. -- go test ./test/e2e -run TestSpec")
		os.Exit(2)
	}
	code, err := run(*binary, *readyTimeout, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-external:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

func run(binary string, readyTimeout time.Duration, command []string) (int, error) {
	dir, err := os.MkdirTemp("", "sgcp-e2e-external-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir) //nolint:errcheck // best effort

	port, err := freePort()
	if err != nil {
		return 1, err
	}
	stderrPath := filepath.Join(dir, "stderr.log")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		return 1, err
	}
	defer stderr.Close() //nolint:errcheck
	cp := exec.Command(binary, "--data-dir="+filepath.Join(dir, "data"), "--secure-port="+strconv.Itoa(port), "--bind-address=127.0.0.1")
	cp.Stderr = stderr
	killWithParent(cp)
	stdout, err := cp.StdoutPipe()
	if err != nil {
		return 1, err
	}
	if err := cp.Start(); err != nil {
		return 1, fmt.Errorf("starting %s: %w", binary, err)
	}
	exited := make(chan error, 1)
	kubeconfig := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if rest, ok := strings.CutPrefix(scanner.Text(), readyLinePrefix); ok {
				kubeconfig <- rest
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cp.Wait()
	}()
	stop := func() error {
		_ = cp.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				return fmt.Errorf("control plane stopped by SIGTERM: %w; its log: %s", err, stderrPath)
			}
			return nil
		case <-time.After(30 * time.Second):
			_ = cp.Process.Kill()
			<-exited
			return errors.New("control plane still running 30s after SIGTERM; killed it")
		}
	}

	var path string
	select {
	case path = <-kubeconfig:
	case err := <-exited:
		log, _ := os.ReadFile(stderrPath)
		return 1, fmt.Errorf("control plane exited before it was ready (%v):\n%s", err, log)
	case <-time.After(readyTimeout):
		return 1, errors.Join(fmt.Errorf("control plane printed no kubeconfig within %s", readyTimeout), stop())
	}
	fmt.Printf("e2e-external: control plane %s serving on 127.0.0.1:%d, kubeconfig %s\n", binary, port, path)

	cmd := exec.CommandContext(context.Background(), command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = os.Stdout, os.Stderr, os.Stdin
	cmd.Env = append(os.Environ(), "SGCP_E2E_PROVIDERS=external", "SGCP_E2E_KUBECONFIG="+path)
	code := 0
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return 1, errors.Join(fmt.Errorf("running %s: %w", strings.Join(command, " "), err), stop())
		}
		code = exitErr.ExitCode()
	}
	return code, stop()
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}
