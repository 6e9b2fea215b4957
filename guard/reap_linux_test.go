package guard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// The child the reaper test's guard runs: it leaves orphans — five
// processes whose parent (a subshell) is gone at once, so they are
// re-parented to the guard — that wait for the file $GO and then exit
// together, and it exits 7 on SIGTERM (its "drain").
const orphanChild = `
trap 'exit 7' TERM
(
	for i in 1 2 3 4 5; do
		sh -c 'while [ ! -e "$GO" ]; do sleep 0.02; done' &
		echo $! >>"$ORPHANS"
	done
)
: >"$READY"
while :; do sleep 0.02; done
`

// TestMain lets the test binary be the guard of the reaper test: a
// process of its own, since a child subreaper stays one until it exits.
func TestMain(m *testing.M) {
	if os.Getenv("GATEHOUSE_TEST_REAPER_GUARD") == "1" {
		os.Exit(reaperGuard())
	}
	os.Exit(m.Run())
}

// reaperGuard makes this process a child subreaper — what PID 1 is in a
// container — and runs a guard over orphanChild until SIGTERM.
func reaperGuard() int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "prctl:", err)
		return 100
	}
	g, err := New(Config{
		Path: "/bin/sh", Args: []string{"-c", orphanChild},
		// Nothing answers here; probes fail but never count (StartGrace).
		LivezURL: "http://127.0.0.1:1/livez", Interval: time.Hour, StartGrace: time.Hour,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 101
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() { g.Signal(<-sigs) }()
	code, err := g.Run(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// procState is pid's state letter from /proc ("Z" for a zombie nobody
// reaped), its parent, and whether it exists at all.
func procState(pid int) (state string, ppid int, exists bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid …; comm may hold spaces, so after the last ')'.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, true
}

func TestGuardAsSubreaperReapsOrphansAndKeepsTheChildsStatus(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	orphans, ready, goFile := filepath.Join(dir, "orphans"), filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	var out bytes.Buffer
	guard := exec.Command(os.Args[0], "-test.run=^$")
	guard.Env = append(os.Environ(), "GATEHOUSE_TEST_REAPER_GUARD=1", "ORPHANS="+orphans, "READY="+ready, "GO="+goFile)
	guard.Stdout, guard.Stderr = io.Discard, &out
	if err := guard.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- guard.Wait() }()
	t.Cleanup(func() {
		_ = os.WriteFile(goFile, nil, 0o600) // let the orphans go, pass or fail
		_ = guard.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("guard's log:\n%s", out.String())
		}
	})

	testenv.Eventually(t, "the child to leave its orphans", func() bool {
		_, err := os.Stat(ready)
		return err == nil
	})
	raw, err := os.ReadFile(orphans)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("orphans file: %q", raw)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 5 {
		t.Fatalf("%d orphans, want 5: %q", len(pids), raw)
	}
	// They wait for $GO, so they are alive here: re-parented to the guard.
	for _, pid := range pids {
		if state, ppid, ok := procState(pid); !ok || ppid != guard.Process.Pid {
			t.Fatalf("orphan %d: exists %v, state %q, parent %d; want the guard %d", pid, ok, state, ppid, guard.Process.Pid)
		}
	}

	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Unreaped, each would stay a zombie ("Z") as long as the guard lives.
	testenv.Eventually(t, "the orphans reaped, not left as zombies", func() bool {
		for _, pid := range pids {
			if _, _, ok := procState(pid); ok {
				return false
			}
		}
		return true
	})

	// The child's own status still reaches the guard: SIGTERM is
	// forwarded, the child exits 7, the guard exits with it.
	if err := guard.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Fatalf("the guard ended with %v, want exit status 7 (the child's)", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the guard did not stop after SIGTERM")
	}
}

// The reaper takes exited children it does not track, and never the one
// it does: exec.Cmd.Wait must still see that one's status. Both have
// exited before the round, as when the gateway and an orphan die at once.
func TestReaperLeavesTheTrackedChildsStatusToWait(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	zombie := func(pid int) bool { state, _, ok := procState(pid); return ok && state == "Z" }
	for _, trackedFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("tracked started first %v", trackedFirst), func(t *testing.T) {
			r := &reaper{log: slog.New(slog.NewTextHandler(io.Discard, nil)), tracked: map[int]struct{}{}, kick: make(chan struct{}, 1)}
			child := exec.Command("/bin/sh", "-c", "exit 7")
			orphan := exec.Command("/bin/sh", "-c", "exit 3") // a child nobody tracks
			start := []func() error{func() error { return r.start(child) }, orphan.Start}
			if !trackedFirst {
				start[0], start[1] = start[1], start[0]
			}
			for _, s := range start {
				if err := s(); err != nil {
					t.Fatal(err)
				}
			}
			testenv.Eventually(t, "both to exit", func() bool { return zombie(child.Process.Pid) && zombie(orphan.Process.Pid) })

			r.reap()
			if !zombie(child.Process.Pid) {
				t.Fatal("the round reaped the tracked child")
			}
			if err := child.Wait(); child.ProcessState == nil || child.ProcessState.ExitCode() != 7 {
				t.Fatalf("Wait on the tracked child: %v, want exit status 7", err)
			}
			r.waited(child.Process.Pid)
			select {
			case <-r.kick:
			default:
				t.Fatal("Wait reaping the tracked child asked for no new round")
			}
			r.reap()
			if _, _, ok := procState(orphan.Process.Pid); ok {
				t.Fatal("the untracked child is still there after the next round")
			}
			_ = orphan.Wait() // its status is gone (reaped); this frees its pidfd
		})
	}
}
