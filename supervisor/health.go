package supervisor

import (
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
