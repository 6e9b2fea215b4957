package sweeper_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/sweeper"
)

// A sweep at once and then again; a second Start refused while running;
// Stop waits for the sweep in progress; started again after a Stop.
func TestSweeper(t *testing.T) {
	var w sweeper.Sweeper
	var n atomic.Int32
	release := make(chan struct{})
	sweep := func(ctx context.Context) {
		if n.Add(1) == 2 {
			<-release // the second sweep is in progress when Stop comes
		}
	}
	ctx := context.Background()
	if err := w.Start(ctx, "test", time.Millisecond, sweep); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, "test", time.Millisecond, sweep); !gh.IsCode(err, gh.CodeConflict) {
		t.Fatalf("a second Start: %v", err)
	}
	for n.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	stopped := make(chan error)
	go func() { stopped <- w.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned during a sweep: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	after := n.Load()
	time.Sleep(20 * time.Millisecond)
	if n.Load() != after {
		t.Fatal("a sweep ran after Stop")
	}
	if err := w.Start(ctx, "test", time.Hour, sweep); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	for n.Load() == after {
		time.Sleep(time.Millisecond)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
