//go:build !linux

package guard

import "syscall"

// childAttr puts the child in a process group of its own: a terminal's
// Ctrl-C reaches it only through the guard, once.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
