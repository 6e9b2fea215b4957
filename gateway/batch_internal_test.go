package gateway

import (
	"context"
	"testing"
	"time"
)

// Stop owns the receive committers too: when it returns, none runs, so no
// commit can land after the gateway said it stopped (and the store may
// close).
func TestStopWaitsForTheReceiveCommitters(t *testing.T) {
	g := &Gateway{}
	b := g.batcher()
	b.mu.Lock()
	b.running += 2
	b.mu.Unlock()
	go b.run()
	go b.run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.wait(ctx); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running != 0 {
		t.Fatalf("%d committers still run after the wait", b.running)
	}
}
