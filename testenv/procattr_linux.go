package testenv

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd when the test process dies, even
// when it dies without running its cleanups (a panic, a -timeout, SIGKILL),
// so that no control plane outlives its test.
func killWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
