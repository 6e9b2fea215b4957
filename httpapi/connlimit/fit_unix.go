//go:build unix

package connlimit

import "syscall"

// OpenFileLimit is the process's open-file limit (RLIMIT_NOFILE, after
// Go raised the soft limit to the hard one at start), or 0 when unknown.
func OpenFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}
