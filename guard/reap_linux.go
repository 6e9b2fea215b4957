package guard

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reaper collects orphans when the guard is their new parent: as a
// container's PID 1, or a child subreaper (PR_SET_CHILD_SUBREAPER), every
// process whose parent dies is re-parented to the guard — the shell tools
// and MCP stdio servers a killed gateway leaves behind. Nobody else waits
// for them, so without a reaper each becomes a zombie holding its pid.
//
// It must not reap the guard's own child: exec.Cmd.Wait waits for that one
// and would lose its exit status (ECHILD). So on SIGCHLD it peeks at the
// next exited child without reaping it (waitid WNOWAIT) and reaps it only
// when it is not tracked. A tracked zombie stops the round — waitid(P_ALL)
// would return it again and hide the others — and Wait reaping it starts
// the next one (waited).
type reaper struct {
	log *slog.Logger
	// mu is held across cmd.Start and tracking its pid, and across a
	// reap: a child that exits at once is tracked before a round can
	// take it for an orphan.
	mu      sync.Mutex
	tracked map[int]struct{}
	kick    chan struct{}
}

// newReaper returns a reaper when this process inherits orphans, nil
// otherwise: an ordinary parent has only its own children, and reaping
// those is exec.Cmd.Wait's job.
func newReaper(log *slog.Logger) *reaper {
	if os.Getpid() != 1 && !isSubreaper() {
		return nil
	}
	return &reaper{log: log, tracked: map[int]struct{}{}, kick: make(chan struct{}, 1)}
}

func isSubreaper() bool {
	var on int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0)
	return err == nil && on != 0
}

// start starts cmd and tracks its pid, so no round reaps it.
func (r *reaper) start(cmd *exec.Cmd) error {
	if r == nil {
		return cmd.Start()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	r.tracked[cmd.Process.Pid] = struct{}{}
	return nil
}

// waited tells the reaper that Wait has reaped pid. A round may have
// stopped at its zombie, with orphans behind it: another one runs.
func (r *reaper) waited(pid int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.tracked, pid)
	r.mu.Unlock()
	r.poke()
}

func (r *reaper) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run reaps orphans on every SIGCHLD until ctx ends.
func (r *reaper) run(ctx context.Context) {
	if r == nil {
		return
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	r.poke() // orphans that exited before the handler was installed
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		case <-r.kick:
		}
		r.reap()
	}
}

// childInfo is the head of the siginfo_t waitid fills for a child
// (<asm-generic/siginfo.h>): three ints, then the union, aligned as a
// pointer, whose SIGCHLD member begins with si_pid. unix.Siginfo keeps the
// union opaque.
type childInfo struct {
	signo, errno, code int32
	_                  [0]uintptr
	pid                int32
}

// reap reaps every exited child that is not tracked, and stops at the
// first that is (or when none has exited). SIGCHLDs coalesce, so one
// signal may stand for many exits: it loops.
func (r *reaper) reap() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD: no children at all
			return
		}
		pid := int((*childInfo)(unsafe.Pointer(&info)).pid)
		if pid == 0 { // children, none exited
			return
		}
		r.mu.Lock()
		if _, ok := r.tracked[pid]; ok {
			r.mu.Unlock()
			return // Wait takes it; waited starts the next round
		}
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		r.mu.Unlock()
		if err != nil && !errors.Is(err, unix.EINTR) {
			r.log.Warn("guard: reaping an orphan failed", "pid", pid, "err", err)
			return
		}
		if got == pid {
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			r.log.Debug("guard: reaped an orphaned process", "pid", pid, "status", code)
		}
	}
}
