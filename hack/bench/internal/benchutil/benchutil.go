// Package benchutil holds what the benchmark harnesses share: processes
// started and stopped by signal, readiness probes, free ports and medians.
package benchutil

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Process is a child process whose output goes to a log file. Stop and
// Kill may be called more than once, e.g. once to measure and again
// deferred.
type Process struct {
	Cmd *exec.Cmd
	Log string
	// exited is closed once the process has exited and err is set.
	exited chan struct{}
	err    error
}

// Start runs path with args, output to logFile.
func Start(path string, args []string, logFile string) (*Process, error) {
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close() //nolint:errcheck
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &Process{Cmd: cmd, Log: logFile, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close() //nolint:errcheck
		close(p.exited)
	}()
	return p, nil
}

// Stop sends SIGTERM and waits up to a minute, then kills. It does
// nothing to a process that has exited.
func (p *Process) Stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(time.Minute):
		p.Kill()
		return fmt.Errorf("%s did not stop within a minute after SIGTERM", p.Cmd.Path)
	}
}

// Exited tells whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Kill ends the process at once and waits for it.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Cmd.Process.Kill()
	<-p.exited
}

// WaitReady polls https://127.0.0.1:port/readyz every 5 ms until it answers
// 200, p exits or timeout passes. The probe skips certificate verification:
// it measures readiness on loopback and does not authenticate the server
// (the upstream anchor's certificate is self-signed).
func WaitReady(port int, p *Process, timeout time.Duration) error {
	return WaitReadyOn("127.0.0.1", port, p, timeout)
}

// WaitReadyOn is WaitReady for a server on another loopback address.
func WaitReadyOn(ip string, port int, p *Process, timeout time.Duration) error {
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see above
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	url := "https://" + net.JoinHostPort(ip, strconv.Itoa(port)) + "/readyz"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close() //nolint:errcheck
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before ready (%v); log: %s", p.err, p.Log)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s; log: %s", timeout, p.Log)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// FreePort returns a loopback port free at the time of the call.
func FreePort() (int, error) { return FreePortOn("127.0.0.1") }

// FreePortOn returns a port free on ip at the time of the call.
func FreePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close() //nolint:errcheck
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Median of v.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Cell formats the median and range of v.
func Cell(v []float64, format func(float64) string) string {
	return fmt.Sprintf("%s (%s-%s)", format(Median(v)), format(slices.Min(v)), format(slices.Max(v)))
}

// Header prints the title and column names of a side-by-side table.
func Header(title, ours, anchor string) {
	fmt.Printf("\n%s\n\n%-40s %22s %24s %8s\n", title, "figure", ours, anchor, "ratio")
}

// Row prints one figure of a side-by-side table: median (min-max) of ours
// and of the anchor, and the ratio of the medians. Without anchor figures,
// the anchor and ratio columns say so.
func Row(name string, ours, anchor []float64, format func(float64) string) {
	if len(anchor) == 0 {
		fmt.Printf("%-40s %22s %24s %8s\n", name, Cell(ours, format), "(none)", "-")
		return
	}
	fmt.Printf("%-40s %22s %24s %8.2f\n", name, Cell(ours, format), Cell(anchor, format), Median(ours)/Median(anchor))
}

// Seconds formats a figure in seconds.
func Seconds(v float64) string { return fmt.Sprintf("%.2f", v) }

// Fail ends a harness on an error.
func Fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
