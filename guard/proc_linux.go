package guard

import "syscall"

// childAttr puts the child in a process group of its own (a terminal's
// Ctrl-C reaches it only through the guard, once) and has the kernel send
// it SIGTERM — a drain — if the guard dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
