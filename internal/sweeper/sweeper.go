// Package sweeper runs a sweep at once and then every interval until it
// is stopped: the Start and Stop of the services whose background work
// is a periodic sweep (the gates' expiry, incidents, library uploads).
package sweeper

import (
	"context"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Sweeper is one periodic sweep. The zero value is stopped; a stopped
// sweeper can be started again.
type Sweeper struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs sweep at once, then every interval, until Stop or the end
// of ctx. name says whose sweeper a second Start found running.
func (w *Sweeper) Start(ctx context.Context, name string, interval time.Duration, sweep func(context.Context)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cancel != nil {
		return gh.Errorf(gh.CodeConflict, "%s: service already started", name)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.cancel, w.done = cancel, done
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			sweep(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the sweeps and waits for the one in progress, or for the end
// of ctx. Stopping a stopped sweeper does nothing.
func (w *Sweeper) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
