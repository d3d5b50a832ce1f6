package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// helperEnv makes the test binary a test process that starts a server,
// prints its pid and waits to be killed.
const helperEnv = "SGCP_TESTENV_KILLED_PARENT"

// A test process killed outright runs no cleanup: the kernel ends its
// server.
func TestServerDiesWithTheTestProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		s, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(s.process.cmd.Process.Pid)
		select {} // until killed
	}

	parent := exec.Command(os.Args[0], "-test.run=^TestServerDiesWithTheTestProcess$")
	// Its work dir, which nobody removes, in the test's.
	parent.Env = append(os.Environ(), helperEnv+"=1", "TMPDIR="+t.TempDir())
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	parent.Stderr = &stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill() //nolint:errcheck // killed already unless the test failed early
	line, err := bufio.NewReader(stdout).ReadString('\n')
	pid, convErr := strconv.Atoi(string(bytes.TrimSpace([]byte(line))))
	if err != nil || convErr != nil {
		t.Fatalf("the test process printed %q (%v), not its server's pid; stderr:\n%s", line, err, stderr.String())
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait() // killed
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return gone(pid), nil
	})
	if err != nil {
		syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // leave nothing running
		t.Fatalf("the server (pid %d) still runs after its test process was killed: %v", pid, err)
	}
}

// gone reports whether pid names no running process: none, or a zombie
// that whoever inherited it has not reaped yet.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
