package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is a loop's floor, ceiling and jitter.
type Policy struct {
	// Floor is the first wait after a failure. Default 1s.
	Floor time.Duration
	// Ceiling bounds every wait. Default 1m.
	Ceiling time.Duration
	// Jitter is the fraction by which a wait is shortened at random, so
	// replicas that failed together do not retry together. Default 0.2;
	// negative means none.
	Jitter float64
}

func (p Policy) withDefaults() Policy {
	if p.Floor <= 0 {
		p.Floor = time.Second
	}
	if p.Ceiling <= 0 {
		p.Ceiling = time.Minute
	}
	if p.Ceiling < p.Floor {
		p.Ceiling = p.Floor
	}
	if p.Jitter == 0 {
		p.Jitter = 0.2
	}
	if p.Jitter < 0 {
		p.Jitter = 0
	}
	if p.Jitter > 1 {
		p.Jitter = 1
	}
	return p
}

// Max is the wait before jitter after n consecutive failures (n ≥ 1):
// Floor·2^(n-1), at most Ceiling. A wait never exceeds it, and never
// falls below (1-Jitter)·Max(n); tests bound a loop's attempts with it.
func (p Policy) Max(n int) time.Duration {
	p = p.withDefaults()
	d := p.Floor
	for i := 1; i < n && d < p.Ceiling; i++ {
		d *= 2
	}
	return min(d, p.Ceiling)
}

// Min is the shortest wait after n consecutive failures: Max(n) less
// its jitter.
func (p Policy) Min(n int) time.Duration {
	p = p.withDefaults()
	return time.Duration(float64(p.Max(n)) * (1 - p.Jitter))
}

// Backoff is one loop's position in its policy. Not safe for concurrent
// use: each loop owns its own.
type Backoff struct {
	p        Policy
	failures int
}

// New starts a loop at the floor.
func (p Policy) New() *Backoff { return &Backoff{p: p.withDefaults()} }

// Next counts a failure and returns how long to wait before the retry.
func (b *Backoff) Next() time.Duration {
	b.failures++
	d := b.p.Max(b.failures)
	if b.p.Jitter > 0 {
		d -= time.Duration(rand.Float64() * b.p.Jitter * float64(d))
	}
	return d
}

// Failures is the number of failures since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// Reset starts over at the floor: call it after a success.
func (b *Backoff) Reset() { b.failures = 0 }

// Wait counts a failure and sleeps its wait; false when ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Sleep waits d or until ctx ends; false when ctx ended first.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Delay is the wait before the next attempt after failures attempts in a
// row failed (0 for the first retry after a loss), never under Floor: for
// loops that count their own failures (the MCP reconnect).
func (p Policy) Delay(failures int) time.Duration {
	p = p.withDefaults()
	b := p.Max(failures + 1)
	d := b - time.Duration(rand.Float64()*p.Jitter*float64(b))
	return max(d, p.Floor)
}

// MinDelay is the shortest wait Delay(failures) can give.
func (p Policy) MinDelay(failures int) time.Duration {
	p = p.withDefaults()
	b := p.Max(failures + 1)
	return max(b-time.Duration(p.Jitter*float64(b)), p.Floor)
}

// MaxAttempts is the most attempts a loop that waits Delay before each can
// make within window, counting from the loss: the bound a test holds a
// loop to against a server that fails at once.
func (p Policy) MaxAttempts(window time.Duration) int {
	n := 0
	for spent := p.MinDelay(0); spent <= window; spent += p.MinDelay(n) {
		n++
	}
	return n
}
