package backoff

import (
	"context"
	"testing"
	"time"
)

func TestWaitsDoubleFromTheFloorToTheCeilingWithJitter(t *testing.T) {
	p := Policy{Floor: 100 * time.Millisecond, Ceiling: time.Second, Jitter: 0.5}
	b := p.New()
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		w *= time.Millisecond
		d := b.Next()
		if d > w || d < w/2 {
			t.Fatalf("wait %d = %v, want in [%v, %v]", i+1, d, w/2, w)
		}
		if p.Max(i+1) != w || p.Min(i+1) != w/2 {
			t.Fatalf("Max/Min(%d) = %v/%v, want %v/%v", i+1, p.Max(i+1), p.Min(i+1), w, w/2)
		}
	}
	b.Reset()
	if d := b.Next(); d > 100*time.Millisecond {
		t.Fatalf("after Reset the wait is %v, want the floor", d)
	}
}

func TestDefaultsAndNoJitter(t *testing.T) {
	p := Policy{Jitter: -1}
	if p.Max(1) != time.Second || p.Max(100) != time.Minute {
		t.Fatalf("defaults: Max(1)=%v Max(100)=%v", p.Max(1), p.Max(100))
	}
	b := p.New()
	if d := b.Next(); d != time.Second {
		t.Fatalf("no jitter: first wait %v, want 1s", d)
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if (Policy{Floor: time.Hour}).New().Wait(ctx) {
		t.Fatal("Wait returned true on an ended context")
	}
}
