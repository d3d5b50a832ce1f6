package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// readyLinePrefix starts the line the binary prints on stdout once it
	// serves; the rest of the line is the admin kubeconfig's path.
	readyLinePrefix = "  export KUBECONFIG="
	// tailLines is how much of the binary's stderr an error quotes.
	tailLines = 20
	// tailBytes bounds what is read to find those lines.
	tailBytes = 16 << 10
)

// process is one run of the binary, its output in log files.
type process struct {
	cmd        *exec.Cmd
	stderrPath string
	// ready receives the rest of the ready line: the kubeconfig's path.
	ready chan string
	// done is closed once the process has exited and its output is
	// written.
	done chan struct{}
}

// startProcess runs binary with args, its stdout and stderr written to
// stdout.log and stderr.log in dir (and to the test's own when attach),
// and returns at once.
func startProcess(binary string, args []string, dir string, attach bool) (*process, error) {
	stdoutLog, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		return nil, err
	}
	stderrLog, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return nil, errors.Join(err, stdoutLog.Close())
	}
	var stdout, stderr io.Writer = stdoutLog, stderrLog
	if attach {
		stdout, stderr = io.MultiWriter(stdoutLog, os.Stdout), io.MultiWriter(stderrLog, os.Stderr)
	}
	closeLogs := func() error { return errors.Join(stdoutLog.Close(), stderrLog.Close()) }

	// Not CommandContext: the control plane outlives the context of its
	// start, and Stop ends it gracefully.
	cmd := exec.Command(binary, args...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errors.Join(err, closeLogs())
	}
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("running %s: %w", binary, err), closeLogs())
	}
	p := &process{cmd: cmd, stderrPath: stderrLog.Name(), ready: make(chan string, 1), done: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		p.copyStdout(pipe, stdout)
	}()
	go func() {
		// Wait closes the pipe: only once everything in it is read.
		<-copied
		_ = cmd.Wait() // the exit status is read from cmd.ProcessState
		_ = closeLogs()
		close(p.done)
	}()
	return p, nil
}

// copyStdout writes the process's stdout to out, line by line, and sends
// the kubeconfig's path of the first ready line to p.ready.
func (p *process) copyStdout(stdout io.Reader, out io.Writer) {
	r := bufio.NewReader(stdout)
	sent := false
	for {
		line, err := r.ReadString('\n')
		_, _ = out.Write([]byte(line)) // a log that cannot be written must not stop the server
		if rest, ok := strings.CutPrefix(line, readyLinePrefix); ok && !sent && err == nil {
			p.ready <- strings.TrimSpace(rest)
			sent = true
		}
		if err != nil {
			return
		}
	}
}

// waitReady waits for the ready line, and returns the kubeconfig's path.
// When the process exits first, the timeout passes or ctx ends, it fails
// quoting the end of stderr; the process has exited then.
func (p *process) waitReady(ctx context.Context, timeout time.Duration) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case kubeconfig := <-p.ready:
		return kubeconfig, nil
	case <-p.done:
		return "", fmt.Errorf("%s exited (%s) before it was ready; %s", p.command(), p.cmd.ProcessState, p.tailMessage())
	case <-timer.C:
		p.kill()
		return "", fmt.Errorf("%s was not ready within %s (Options.StartTimeout); killed it; %s", p.command(), timeout, p.tailMessage())
	case <-ctx.Done():
		p.kill()
		return "", fmt.Errorf("waiting for %s to be ready: %w; killed it; %s", p.command(), context.Cause(ctx), p.tailMessage())
	}
}

// stop sends SIGTERM, waits at most timeout for the process to exit, then
// kills it. It reports a process that had exited before, or that did not
// exit with status 0.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had exited (%s) before it was stopped; %s", p.command(), p.cmd.ProcessState, p.tailMessage())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.kill()
		return fmt.Errorf("sending SIGTERM to %s: %w; killed it", p.command(), err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.kill()
		return fmt.Errorf("%s still ran %s after SIGTERM (Options.StopTimeout); killed it; %s", p.command(), timeout, p.tailMessage())
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("%s stopped by SIGTERM with %s; %s", p.command(), p.cmd.ProcessState, p.tailMessage())
	}
	return nil
}

// kill ends the process, if it still runs, and waits until it has.
func (p *process) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill() // fails only when it has exited already
	<-p.done
}

// command is the command line, for messages.
func (p *process) command() string {
	return strings.Join(p.cmd.Args, " ")
}

// tailMessage introduces the end of stderr in an error.
func (p *process) tailMessage() string {
	return "its stderr ended with:\n" + p.tail()
}

// tail returns the last lines of the process's stderr, indented.
func (p *process) tail() string {
	f, err := os.Open(p.stderrPath)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	defer f.Close() //nolint:errcheck // read only
	if info, err := f.Stat(); err == nil && info.Size() > tailBytes {
		if _, err := f.Seek(info.Size()-tailBytes, io.SeekStart); err != nil {
			return "  (" + err.Error() + ")"
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return "  (nothing)"
	}
	lines = lines[max(0, len(lines)-tailLines):]
	return "  " + strings.Join(lines, "\n  ")
}
