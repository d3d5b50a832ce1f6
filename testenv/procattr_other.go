//go:build !linux

package testenv

import "os/exec"

// killWithParent is a no-op where the kernel offers no parent-death signal:
// Stop, which StartTestServer calls when the test ends, ends the process.
func killWithParent(*exec.Cmd) {}
