//go:build unix

package shell

import (
	"os/exec"
	"syscall"

	"github.com/gatehouse/gatehouse/tools/sandbox"
)

// setProcessGroup runs the command in its own process group and makes the
// context's cancel kill the whole group, so a command's children die with
// it. Descriptors the gateway inherited are not passed on.
func setProcessGroup(cmd *exec.Cmd) {
	sandbox.SealInheritedDescriptors()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killProcessGroup kills what is left of a started command's process group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
