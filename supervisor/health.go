package supervisor

import (
	"context"
	"sync/atomic"
	"time"
)

// health is what the process's liveness and a reload look at: whether the
// claim loop still goes round, how many attempts run, whether claims are
// paused.
type health struct {
	beat    atomic.Int64 // unix nanos of the claim loop's last round
	running atomic.Int64 // attempts in flight
	paused  atomic.Bool  // claims stopped for a reload
	resume  chan struct{}
	more    chan struct{} // a claim saw a backlog: a secondary claimer may start
}

func (h *health) tick(now time.Time) { h.beat.Store(now.UnixNano()) }

// Heartbeat is when the claim loop last went round. The loop goes round
// at least every Poll even when every worker is busy, so a stale heartbeat
// means a stuck loop, not a busy pool. Zero before Start.
func (s *Supervisor) Heartbeat() time.Time {
	n := s.health.beat.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Poll is the longest the claim loop waits between rounds: a heartbeat
// older than a few of these is a loop that stopped.
func (s *Supervisor) Poll() time.Duration { return s.cfg.Poll }

// Running is the number of attempts in flight on this process.
func (s *Supervisor) Running() int { return int(s.health.running.Load()) }

// Pause stops claiming new runs (attempts in flight go on); a reload
// pauses, waits for Running to reach zero, and restarts. The loop keeps
// its heartbeat while paused.
func (s *Supervisor) Pause() { s.health.paused.Store(true) }

// Resume claims again after Pause.
func (s *Supervisor) Resume() {
	if s.health.paused.CompareAndSwap(true, false) {
		select {
		case s.health.resume <- struct{}{}:
		default:
		}
	}
}

// Paused says whether claims are paused.
func (s *Supervisor) Paused() bool { return s.health.paused.Load() }

// waitForWork is Kernel.WaitForWork for up to d, the heartbeat kept every
// Poll: a claim loop backing off from a database that is down is alive.
func (s *Supervisor) waitForWork(ctx context.Context, wake <-chan struct{}, d time.Duration) bool {
	for until := time.Now().Add(d); ; {
		left := time.Until(until)
		if left <= 0 || ctx.Err() != nil {
			return false
		}
		if s.k.WaitForWork(ctx, wake, min(left, s.cfg.Poll)) {
			return true
		}
		s.health.tick(time.Now())
	}
}

// idle waits before the claimer's next claim: the primary for a wake-up
// or d, the others for a claim that saw a backlog. It reports whether work
// was signalled.
func (s *Supervisor) idle(ctx context.Context, primary bool, wake <-chan struct{}, d time.Duration) bool {
	if primary {
		return s.waitForWork(ctx, wake, d)
	}
	select {
	case <-s.health.more:
		return true
	case <-ctx.Done():
		return false
	}
}
