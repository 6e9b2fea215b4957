package inflight

import (
	"context"
	"sync"
)

// Group is a count of running goroutines. Unlike a sync.WaitGroup, Go may
// be called while Wait is waiting (a request that arrives as the service
// stops is counted, not a misuse), and Wait gives up with its context.
// The zero Group is ready; a Group must not be copied.
type Group struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while n is zero
}

// Go runs fn on a goroutine of its own, counted until fn returns.
func (g *Group) Go(fn func()) {
	g.mu.Lock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	g.mu.Unlock()
	go func() {
		defer g.done()
		fn()
	}()
}

func (g *Group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
		g.idle = nil
	}
}

// Wait returns when no goroutine of g is running, or with ctx's error
// when ctx ends first.
func (g *Group) Wait(ctx context.Context) error {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
