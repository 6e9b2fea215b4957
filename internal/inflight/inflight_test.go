package inflight_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/inflight"
)

// Wait waits for every goroutine started, including one started while it
// waits, and gives up with its context.
func TestWaitWaitsForEveryGoroutine(t *testing.T) {
	var g inflight.Group
	if err := g.Wait(context.Background()); err != nil {
		t.Fatalf("an idle group: %v", err)
	}
	release := make(chan struct{})
	ran := make(chan struct{}, 2)
	g.Go(func() { <-release; ran <- struct{}{} })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); err == nil {
		t.Fatal("Wait returned while a goroutine runs")
	}
	waited := make(chan error, 1)
	go func() { waited <- g.Wait(context.Background()) }()
	g.Go(func() { <-release; ran <- struct{}{} })
	close(release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	<-ran
	<-ran
}
