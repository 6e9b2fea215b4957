//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// setProcessGroup runs the command in its own process group and makes the
// context's cancel kill the whole group, so a command's children die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
