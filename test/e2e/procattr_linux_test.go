package e2e

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd when this test process dies, even
// when it dies without running its cleanups (a panic, a -timeout, SIGKILL), so
// that no control plane is left running.
func killWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
