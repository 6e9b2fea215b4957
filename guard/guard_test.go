package guard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// fakeChild is a child that records its signals: SIGKILL ends it with 137,
// SIGTERM and SIGINT with termCode (a drain), and exit ends it at once.
type fakeChild struct {
	pid      int
	termCode int
	mu       sync.Mutex
	sigs     []os.Signal
	done     chan struct{}
	once     sync.Once
	code     int
}

func (c *fakeChild) Pid() int              { return c.pid }
func (c *fakeChild) Done() <-chan struct{} { return c.done }
func (c *fakeChild) ExitCode() int         { return c.code }
func (c *fakeChild) exit(code int)         { c.once.Do(func() { c.code = code; close(c.done) }) }
func (c *fakeChild) Signal(sig os.Signal) error {
	c.mu.Lock()
	c.sigs = append(c.sigs, sig)
	c.mu.Unlock()
	switch sig {
	case syscall.SIGKILL:
		c.exit(137)
	case syscall.SIGTERM, syscall.SIGINT:
		c.exit(c.termCode)
	}
	return nil
}
func (c *fakeChild) signals() []os.Signal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]os.Signal(nil), c.sigs...)
}

// harness runs a guard over fake children; live decides each probe.
type harness struct {
	g        *Guard
	mu       sync.Mutex
	children []*fakeChild
	starts   []time.Time
	onStart  func(c *fakeChild)
	live     func(c *fakeChild) (liveness, error)
	code     chan int
}

func newHarness(t *testing.T, cfg Config) *harness {
	cfg.Path, cfg.LivezURL = "gatehouse", "http://127.0.0.1:1/livez"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{g: g, code: make(chan int, 1),
		live: func(*fakeChild) (liveness, error) { return liveness{Heartbeat: time.Now()}, nil }}
	g.start = func() (process, error) {
		h.mu.Lock()
		c := &fakeChild{pid: 1000 + len(h.children), done: make(chan struct{})}
		h.children = append(h.children, c)
		h.starts = append(h.starts, time.Now())
		on := h.onStart
		h.mu.Unlock()
		if on != nil {
			on(c)
		}
		return c, nil
	}
	g.probe = func(ctx context.Context, pid int) (liveness, error) {
		c := h.child(pid - 1000)
		return h.live(c)
	}
	return h
}

func (h *harness) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		code, _ := h.g.Run(ctx)
		h.code <- code
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.code:
		case <-time.After(time.Minute):
			t.Error("Run did not return after its context ended")
		}
	})
}

func (h *harness) child(i int) *fakeChild {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 || i >= len(h.children) {
		return nil
	}
	return h.children[i]
}

func (h *harness) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.children) }

func TestGuardRestartsOnlyAfterFailuresInARow(t *testing.T) {
	h := newHarness(t, Config{Interval: 5 * time.Millisecond, Failures: 3, Backoff: time.Millisecond})
	var probes atomic.Int64
	var dead atomic.Bool
	// Two failures, then an answer, over and over: never three in a row.
	h.live = func(c *fakeChild) (liveness, error) {
		n := probes.Add(1)
		if dead.Load() && c.pid == 1000 {
			return liveness{}, errors.New("no answer")
		}
		if n%3 != 0 {
			return liveness{}, errors.New("no answer")
		}
		return liveness{Heartbeat: time.Now()}, nil
	}
	h.run(t)
	testenv.Eventually(t, "many probes", func() bool { return probes.Load() > 60 })
	if n := h.count(); n != 1 {
		t.Fatalf("restarted on failures that were not in a row: %d children", n)
	}
	dead.Store(true)
	testenv.Eventually(t, "a second child", func() bool { return h.count() == 2 })
	first := h.child(0)
	if sigs := first.signals(); len(sigs) != 1 || sigs[0] != syscall.SIGKILL || first.ExitCode() != 137 {
		t.Fatalf("the unanswering child got %v, exit %d", sigs, first.ExitCode())
	}
}

func TestGuardDoesNotCountFailuresWhileTheChildStarts(t *testing.T) {
	h := newHarness(t, Config{Interval: 5 * time.Millisecond, Failures: 2, StartGrace: time.Hour})
	var probes atomic.Int64
	h.live = func(*fakeChild) (liveness, error) { probes.Add(1); return liveness{}, errors.New("connection refused") }
	h.run(t)
	testenv.Eventually(t, "many probes", func() bool { return probes.Load() > 40 })
	if n := h.count(); n != 1 {
		t.Fatalf("a starting child was restarted: %d children", n)
	}
}

func TestGuardRestartsAnExitedChildWithDoublingBackoff(t *testing.T) {
	h := newHarness(t, Config{Interval: time.Hour, Backoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond})
	h.onStart = func(c *fakeChild) { c.exit(1) }
	h.run(t)
	testenv.Eventually(t, "six starts", func() bool { return h.count() >= 6 })
	h.mu.Lock()
	starts := append([]time.Time(nil), h.starts...)
	h.mu.Unlock()
	want := []time.Duration{20, 40, 80, 80, 80}
	for i, w := range want {
		if gap := starts[i+1].Sub(starts[i]); gap < w*time.Millisecond {
			t.Fatalf("restart %d came after %s, before its backoff of %s", i+1, gap, w*time.Millisecond)
		}
	}
}

func TestGuardForwardsTheSignalAndExitsWithTheChildsStatus(t *testing.T) {
	h := newHarness(t, Config{Interval: 5 * time.Millisecond})
	h.onStart = func(c *fakeChild) { c.termCode = 3 }
	h.run(t)
	testenv.Eventually(t, "the child", func() bool { return h.count() == 1 })
	h.g.Signal(syscall.SIGINT)
	var code int
	select {
	case code = <-h.code:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after SIGINT")
	}
	h.code <- code // for the cleanup
	c := h.child(0)
	if sigs := c.signals(); len(sigs) != 1 || sigs[0] != syscall.SIGINT || code != 3 || h.count() != 1 {
		t.Fatalf("child got %v; guard exited %d with %d children", sigs, code, h.count())
	}
}

func TestGuardDoesNotRestartAChildThatRefusedItsConfiguration(t *testing.T) {
	h := newHarness(t, Config{Interval: time.Hour, Backoff: time.Millisecond})
	h.onStart = func(c *fakeChild) { c.exit(2) }
	h.run(t)
	select {
	case code := <-h.code:
		h.code <- code
		if code != 2 || h.count() != 1 {
			t.Fatalf("exit %d after %d starts", code, h.count())
		}
	case <-time.After(time.Minute):
		t.Fatal("the guard kept restarting a child that refused its configuration")
	}
}

func TestGuardReloadWaitsForRunningTurns(t *testing.T) {
	h := newHarness(t, Config{Interval: 5 * time.Millisecond, ReloadMaxWait: time.Hour})
	var running atomic.Int64
	running.Store(1)
	h.live = func(c *fakeChild) (liveness, error) {
		paused := false
		for _, s := range c.signals() {
			paused = paused || s == syscall.SIGUSR1
		}
		return liveness{PID: c.pid, Running: int(running.Load()), Paused: paused, Heartbeat: time.Now()}, nil
	}
	h.run(t)
	testenv.Eventually(t, "the child answering", func() bool { return h.count() == 1 })
	time.Sleep(20 * time.Millisecond) // a probe or two: the child is live
	h.g.Reload()
	first := h.child(0)
	testenv.Eventually(t, "claims paused", func() bool {
		s := first.signals()
		return len(s) > 0 && s[0] == syscall.SIGUSR1
	})
	time.Sleep(100 * time.Millisecond) // many probes see the turn running
	if s := first.signals(); len(s) != 1 || h.count() != 1 {
		t.Fatalf("the child was stopped with a turn running: %v, %d children", s, h.count())
	}
	running.Store(0)
	testenv.Eventually(t, "a new child", func() bool { return h.count() == 2 })
	if s := first.signals(); len(s) != 2 || s[1] != syscall.SIGTERM {
		t.Fatalf("the old child got %v, want SIGUSR1 then SIGTERM", s)
	}
}
