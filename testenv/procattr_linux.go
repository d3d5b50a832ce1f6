package testenv

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd when the test process dies, even
// when it dies without running its cleanups (a panic, a -timeout, SIGKILL),
// so that no control plane outlives its test. (The signal follows the
// thread that started cmd; Go ends a thread only when a goroutine locked to
// it with runtime.LockOSThread returns without unlocking, so do not start
// servers from such a goroutine.)
func killWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
