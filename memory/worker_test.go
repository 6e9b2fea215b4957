package memory_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/memory"
)

// Stop waits for the job the worker is running: the caller may close the
// store as soon as Stop returns.
func TestWorkerStopWaitsForTheRunningJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		m := newMemory(e, memory.Config{JobPoll: 10 * time.Millisecond, Batch: 1})
		remember(t, m, "web:w", memory.Turn{SessionID: "s1", Seq: 2, At: e.clock.Now().Add(-time.Minute), UserText: "My name is Ana."})
		started := make(chan struct{})
		var finished atomic.Bool
		w := memory.NewWorker(m, func(ctx context.Context, turns []memory.Turn) ([]memory.Found, error) {
			close(started)
			<-ctx.Done()
			time.Sleep(200 * time.Millisecond) // winding down after the cancel
			finished.Store(true)
			return nil, ctx.Err()
		})
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker never ran the queued job")
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		if !finished.Load() {
			t.Fatal("Stop returned while the job was still running")
		}
		if err := w.Stop(stopCtx); err != nil {
			t.Fatalf("a second Stop: %v", err)
		}
	})
}
