package memory

import (
	"context"
	"sync"

	gh "github.com/gatehouse/gatehouse"
)

// Worker is the service that runs the model pass's queued jobs in the
// background (Work, every JobPoll) between Start and Stop. It owns its
// goroutine: Stop returns once the loop, and the job it was running, have
// ended, so the store is never closed under a job.
type Worker struct {
	m       *Memory
	extract Extract

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewWorker returns the job worker of m, extracting with extract.
func NewWorker(m *Memory, extract Extract) *Worker {
	return &Worker{m: m, extract: extract}
}

// Start runs the job loop until Stop. The loop outlives ctx's
// cancellation: only Stop ends it, so a drain decides when.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done != nil {
		return gh.Errorf(gh.CodeConflict, "memory worker already started")
	}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		_ = w.m.Work(ctx, w.extract)
	}()
	return nil
}

// Stop ends the loop (a job in flight sees its context end; its lease
// lets another replica take it again) and waits for it, at most until
// ctx ends.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return gh.Wrap(gh.CodeUnavailable, ctx.Err(), "memory worker did not stop in time")
	}
}
