//go:build !unix

package shell

import "os/exec"

// setProcessGroup does nothing here: the context's cancel kills the shell only.
func setProcessGroup(cmd *exec.Cmd) {}

// killProcessGroup does nothing here.
func killProcessGroup(cmd *exec.Cmd) {}
