package gateway

import (
	"context"
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
	defer g.setState(platform, StateStopped, "")
	for ctx.Err() == nil {
		now := g.cfg.Now().UTC()
		held, err := g.st.AcquirePlatformLease(ctx, name, g.cfg.Owner, now, now.Add(g.cfg.LeaseTTL))
		if err != nil && ctx.Err() == nil {
			g.setState(platform, StateRetrying, "lease: "+err.Error())
		}
		if err != nil || !held {
			if err == nil {
				g.setState(platform, StateStandby, "")
			}
			sleep(ctx, g.cfg.LeaseTTL/3)
			continue
		}
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
	wg.Add(2)
	go func() { defer wg.Done(); g.out.Dispatch(hctx, a) }()
	go func() { defer wg.Done(); g.connect(hctx, a) }()
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
			msg := "lease lost"
			if err != nil {
				msg = "lease renewal failed: " + err.Error()
			}
			g.cfg.Logger.Warn("platform lease lost; connection stopped", "platform", platform, "err", err)
			g.setState(platform, StateRetrying, msg)
			return
		}
	}
}

// connect runs the adapter's connection, reconnecting with backoff.
func (g *Gateway) connect(ctx context.Context, a chat.Adapter) {
	platform := a.Platform()
	backoff := time.Second
	for ctx.Err() == nil {
		g.setState(platform, StateConnected, "")
		start := time.Now()
		err := a.Connect(ctx, g)
		if ctx.Err() != nil {
			return
		}
		msg := "connection ended"
		if err != nil {
			msg = err.Error()
		}
		g.cfg.Logger.Warn("platform connection ended; reconnecting", "platform", platform, "err", err, "backoff", backoff)
		g.setState(platform, StateRetrying, msg)
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		sleep(ctx, backoff)
		backoff = min(backoff*2, time.Minute)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
