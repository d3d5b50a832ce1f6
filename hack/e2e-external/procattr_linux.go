package main

import (
	"os/exec"
	"syscall"
)

// killWithParent makes the kernel kill cmd when this process dies, however
// it dies, so that no control plane is left running.
func killWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
