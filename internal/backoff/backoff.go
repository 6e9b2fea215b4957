// Package backoff is the wait between attempts of a retry loop: it grows
// from a floor to a ceiling, doubling, with jitter, so a loop against a
// server that fails at once neither hammers it nor waits longer than the
// ceiling once it is back.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Policy says how long to wait between attempts.
type Policy struct {
	// Floor is the shortest wait, before the first retry. Defaults to 1s.
	Floor time.Duration
	// Ceiling is the longest wait. Defaults to 1m.
	Ceiling time.Duration
	// Jitter is the fraction of each wait drawn at random (the wait is
	// between base·(1−Jitter) and base, never under Floor), so many
	// clients that lost one server do not come back in step. Defaults to
	// 0.2; a negative value gives none.
	Jitter float64
}

func (p Policy) withDefaults() Policy {
	if p.Floor <= 0 {
		p.Floor = time.Second
	}
	if p.Ceiling < p.Floor {
		p.Ceiling = max(time.Minute, p.Floor)
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = 0.2
	case p.Jitter < 0:
		p.Jitter = 0
	case p.Jitter > 1:
		p.Jitter = 1
	}
	return p
}

// base is Floor·2^failures, at most Ceiling.
func (p Policy) base(failures int) time.Duration {
	d := p.Floor
	for i := 0; i < failures && d < p.Ceiling; i++ {
		d *= 2
	}
	return min(d, p.Ceiling)
}

// Delay is the wait before the next attempt after failures attempts in a
// row failed (0 for the first retry after a loss).
func (p Policy) Delay(failures int) time.Duration {
	p = p.withDefaults()
	b := p.base(failures)
	d := b - time.Duration(rand.Float64()*p.Jitter*float64(b))
	return max(d, p.Floor)
}

// MinDelay is the shortest wait Delay(failures) can give.
func (p Policy) MinDelay(failures int) time.Duration {
	p = p.withDefaults()
	b := p.base(failures)
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
