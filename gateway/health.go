package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// A platform's state comes from evidence, not from intent: while this
// replica holds the platform's lease, it is connected only when the last
// round trip to the platform succeeded (Health(nil), from the adapter's
// polls and sockets, the gateway's probes and the outbox's sends), and
// retrying with that round trip's error when it failed. Standby (another
// replica holds the lease) and stopped are about the lease, not the
// platform.

// Loops' floors and ceilings (docs/operations.md names them).
var (
	// connectPolicy spaces reconnects and probes of a failing platform.
	connectPolicy = backoff.Policy{Floor: time.Second, Ceiling: time.Minute}
	// refusedPolicy spaces them once the platform refused the token: no
	// retry helps until an operator fixes it, so do not hammer it.
	refusedPolicy = backoff.Policy{Floor: 30 * time.Second, Ceiling: 10 * time.Minute, Jitter: -1}
)

// errNoEvidence is the state's cause before the first round trip.
var errNoEvidence = errors.New("connecting: no round trip to the platform has answered yet")

// Health records a round trip's outcome (chat.Sink).
func (g *Gateway) Health(_ context.Context, platform string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.states[platform]
	if s == nil {
		return
	}
	now := g.cfg.Now()
	if err == nil {
		s.lastOK = now
	} else {
		s.lastFailed, s.lastErr = now, err
	}
	g.refreshLocked(platform, s)
}

// setHolding records whether this replica holds the platform's lease and
// runs its connection; cause explains a state that is not the
// platform's (a lease error).
func (g *Gateway) setHolding(platform string, holding bool, state string, cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.states[platform]
	if s == nil {
		return
	}
	if holding && !s.holding {
		// A new hold starts with no evidence: what an earlier hold saw
		// may be stale (the lease moved away and back).
		s.lastOK, s.lastFailed, s.lastErr = time.Time{}, time.Time{}, nil
	}
	s.holding, s.outside, s.outsideErr = holding, state, cause
	g.refreshLocked(platform, s)
}

// refreshLocked derives the state from the evidence and moves since and
// the metrics when it changes. g.mu is held.
func (g *Gateway) refreshLocked(platform string, s *adapterState) {
	state, cause := s.outside, s.outsideErr
	if s.holding {
		switch {
		case !s.lastOK.IsZero() && !s.lastOK.Before(s.lastFailed):
			state, cause = StateConnected, nil
		case s.lastErr != nil:
			state, cause = StateRetrying, s.lastErr
		default:
			state, cause = StateRetrying, errNoEvidence
		}
	}
	if s.state != state {
		s.state, s.since = state, g.cfg.Now()
	}
	if cause != nil {
		s.lastError = cause.Error()
	} else if state == StateConnected || state == StateStandby || state == StateStopped {
		s.lastError = ""
	}
	s.tokenRefused = cause != nil && chat.IsTokenRefused(cause)
	connected := 0.0
	if state == StateConnected {
		connected = 1
	}
	g.metrics.connected.WithLabelValues(platform).Set(connected)
	for _, st := range []string{StateStopped, StateStandby, StateConnected, StateRetrying} {
		v := 0.0
		if st == state {
			v = 1
		}
		g.metrics.state.WithLabelValues(platform, st).Set(v)
	}
}

// heard reports when the platform last answered or failed, whichever is
// later.
func (g *Gateway) heard(platform string) time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.states[platform]
	if s == nil {
		return time.Time{}
	}
	if s.lastOK.After(s.lastFailed) {
		return s.lastOK
	}
	return s.lastFailed
}

// probe asks a Prober adapter for a round trip and records it; adapters
// without one report through their connection only.
func (g *Gateway) probe(ctx context.Context, a chat.Adapter) error {
	p, ok := a.(chat.Prober)
	if !ok {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, g.cfg.SendTimeout)
	defer cancel()
	err := p.Probe(pctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	g.Health(ctx, a.Platform(), err)
	return err
}

// watch probes the platform whenever it has been silent for
// ProbeInterval: a platform in webhook mode, or a quiet one, still shows
// whether its API answers.
func (g *Gateway) watch(ctx context.Context, a chat.Adapter) {
	if _, ok := a.(chat.Prober); !ok {
		return
	}
	t := time.NewTicker(g.cfg.ProbeInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if g.cfg.Now().Sub(g.heard(a.Platform())) >= g.cfg.ProbeInterval {
			_ = g.probe(ctx, a)
		}
	}
}

// retryWait is the wait after err: from the refused-token policy for a
// refused token, else from b (and the refused one starts over).
func retryWait(b, refused *backoff.Backoff, err error) time.Duration {
	if chat.IsTokenRefused(err) {
		return refused.Next()
	}
	refused.Reset()
	return b.Next()
}
