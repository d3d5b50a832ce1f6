//go:build !linux

package e2e

import "os/exec"

// killWithParent is a no-op where the kernel offers no parent-death signal;
// t.Cleanup still kills every process the suite starts.
func killWithParent(*exec.Cmd) {}
