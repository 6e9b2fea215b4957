package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// runPlatform holds a platform's lease whenever it can and, while it does,
// runs the platform's connection and dispatcher. Another replica holding
// the lease leaves this one on standby; when that replica dies its lease
// expires and this one takes over.
func (g *Gateway) runPlatform(ctx context.Context, a chat.Adapter) {
	platform := a.Platform()
	name := "platform:" + platform
	defer g.setHolding(platform, false, StateStopped, nil)
	for ctx.Err() == nil {
		now := g.cfg.Now().UTC()
		held, err := g.st.AcquirePlatformLease(ctx, name, g.cfg.Owner, now, now.Add(g.cfg.LeaseTTL))
		if err != nil && ctx.Err() == nil {
			g.setHolding(platform, false, StateRetrying, fmt.Errorf("lease: %w", err))
		}
		if err != nil || !held {
			if err == nil {
				g.setHolding(platform, false, StateStandby, nil)
			}
			sleep(ctx, g.cfg.LeaseTTL/3)
			continue
		}
		g.setHolding(platform, true, "", nil)
		g.holdPlatform(ctx, a, name)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = g.st.ReleasePlatformLease(rctx, name, g.cfg.Owner)
}

// holdPlatform runs the connection and dispatcher until the lease is lost
// or ctx ends.
func (g *Gateway) holdPlatform(ctx context.Context, a chat.Adapter, name string) {
	platform := a.Platform()
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); g.out.Dispatch(hctx, a) }()
	go func() { defer wg.Done(); g.connect(hctx, a) }()
	go func() { defer wg.Done(); g.watch(hctx, a) }()
	defer func() { cancel(); wg.Wait() }()
	t := time.NewTicker(g.cfg.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := g.cfg.Now().UTC()
		held, err := g.st.AcquirePlatformLease(ctx, name, g.cfg.Owner, now, now.Add(g.cfg.LeaseTTL))
		if err != nil || !held {
			// Lost, or cannot prove we hold it: stop before another
			// replica starts a second connection.
			cause := errors.New("lease lost")
			if err != nil {
				cause = fmt.Errorf("lease renewal failed: %w", err)
			}
			g.cfg.Logger.Warn("platform lease lost; connection stopped", "platform", platform, "err", err)
			g.setHolding(platform, false, StateRetrying, cause)
			return
		}
	}
}

// connect runs the adapter's connection, first asking the platform a
// cheap authenticated call (a refused token is known before a connection
// is tried), and reconnects with backoff: 1s to 1m, or 30s to 10m while
// the token is refused.
func (g *Gateway) connect(ctx context.Context, a chat.Adapter) {
	platform := a.Platform()
	wait, refused := connectPolicy.New(), refusedPolicy.New()
	for ctx.Err() == nil {
		if err := g.probe(ctx, a); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := retryWait(wait, refused, err)
			g.logFailure(platform, "platform check failed; retrying", err, d)
			sleep(ctx, d)
			continue
		}
		start := time.Now()
		err := a.Connect(ctx, g)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("connection ended")
		}
		g.Health(ctx, platform, err)
		if time.Since(start) > time.Minute {
			wait.Reset()
		}
		d := retryWait(wait, refused, err)
		g.logFailure(platform, "platform connection ended; reconnecting", err, d)
		sleep(ctx, d)
	}
}

// logFailure logs a failing platform once per cause: a refused token
// retried every 10 minutes says so once, not every time.
func (g *Gateway) logFailure(platform, msg string, err error, backoff time.Duration) {
	g.mu.Lock()
	s := g.states[platform]
	same := s != nil && s.loggedErr == err.Error()
	if s != nil {
		s.loggedErr = err.Error()
	}
	g.mu.Unlock()
	if same {
		g.cfg.Logger.Debug(msg, "platform", platform, "err", err, "backoff", backoff)
		return
	}
	g.cfg.Logger.Warn(msg, "platform", platform, "err", err, "backoff", backoff, "token_refused", chat.IsTokenRefused(err))
}

// sendOutcome takes a send's outcome as evidence (outbox.Config's
// SendOutcome). A refusal about one message or chat (a 400, a 403 from a
// user who blocked the bot, a 429) is the API answering, so it counts as
// a round trip that succeeded; a transport error, a refused token, a 404
// on the method or a 5xx count as failures.
func (g *Gateway) sendOutcome(ctx context.Context, platform string, err error) {
	g.Health(ctx, platform, sendHealth(err))
}

func sendHealth(err error) error {
	if err == nil || chat.IsTokenRefused(err) {
		return err
	}
	if se, ok := chat.AsSendError(err); ok {
		switch {
		case se.Status == 401:
			return chat.TokenRefused(err)
		case se.Status == 404 || se.Status >= 500 || se.Status == 0:
			return err
		default:
			return nil
		}
	}
	return err
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
