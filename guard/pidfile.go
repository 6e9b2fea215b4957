package guard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	gh "github.com/gatehouse/gatehouse"
)

// writePIDFile records this process as the guard at path (mode 0600). A
// file naming a guard that still runs is refused: two guards on one data
// directory would each start a gateway.
func writePIDFile(path string) error {
	if pid, err := readPID(path); err == nil && pid != os.Getpid() && isGuard(pid) {
		return gh.Errorf(gh.CodeConflict, "guard: another guard (pid %d) runs on this data directory (%s)", pid, path)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return gh.Wrap(gh.CodeInternal, err, "guard: write pid file")
	}
	if err := os.Rename(tmp, path); err != nil {
		return gh.Wrap(gh.CodeInternal, err, "guard: write pid file")
	}
	return nil
}

func readPID(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s holds %q, not a pid", path, raw)
	}
	return pid, nil
}

// isGuard reports whether pid is a running guard: the process exists and,
// where /proc tells, was started as "… guard" (a pid reused by another
// program is not signalled).
func isGuard(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true // no /proc here: trust the pid file
	}
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if string(arg) == "guard" {
			return true
		}
	}
	return false
}

// SignalReload asks the guard whose pid file is at path to reload (SIGHUP)
// and returns its pid. It fails when no guard runs there.
func SignalReload(path string) (int, error) {
	pid, err := readPID(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, gh.Wrap(gh.CodeNotFound, err, "no guard runs on this data directory (no %s): start the gateway with `gatehouse guard`", path)
	}
	if err != nil {
		return 0, gh.Wrap(gh.CodeInvalid, err, "read the guard's pid file")
	}
	if !isGuard(pid) {
		return 0, gh.Errorf(gh.CodeNotFound, "the guard of %s (pid %d) is not running", path, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		return 0, gh.Wrap(gh.CodeUnavailable, err, "signal the guard (pid %d)", pid)
	}
	return pid, nil
}
