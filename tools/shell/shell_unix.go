//go:build unix

package shell

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcessGroup runs the command in its own process group and makes the
// context's cancel kill the whole group, so a command's children die with it.
func setProcessGroup(cmd *exec.Cmd) {
	closeInheritedOnExec()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// closeInheritedOnExec marks every descriptor above stderr close-on-exec.
// Go opens its own that way, but descriptors the gateway inherited from
// whatever started it (a supervisor's pipe, a socket) are not, and a child
// would inherit them in turn: a command must get stdin, stdout and stderr
// and nothing else.
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// killProcessGroup kills what is left of a started command's process group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// SealInheritedDescriptors marks every descriptor the process inherited
// (above stderr) close-on-exec, so no program it starts — a shell
// command, an MCP server — receives them. Call it before starting any.
func SealInheritedDescriptors() { closeInheritedOnExec() }
