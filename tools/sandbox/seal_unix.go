//go:build unix

package sandbox

import (
	"os"
	"strconv"
	"syscall"
)

// SealInheritedDescriptors marks every descriptor above stderr
// close-on-exec. Go opens its own that way, but descriptors the gateway
// inherited from whatever started it (a supervisor's pipe, a socket) are
// not, and a child would inherit them in turn: a program the gateway
// starts — a shell command, an MCP server — gets stdin, stdout, stderr and
// what it is handed, nothing else. Call it before starting any.
func SealInheritedDescriptors() {
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
