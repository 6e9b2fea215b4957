package backoff_test

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/internal/backoff"
)

func TestDelayStaysBetweenFloorAndCeilingAndGrows(t *testing.T) {
	p := backoff.Policy{Floor: time.Second, Ceiling: time.Minute, Jitter: 0.2}
	prevMin := time.Duration(0)
	for n := 0; n < 20; n++ {
		lo := p.MinDelay(n)
		if lo < prevMin {
			t.Errorf("MinDelay(%d) = %s, shorter than MinDelay(%d) = %s", n, lo, n-1, prevMin)
		}
		prevMin = lo
		for range 200 {
			d := p.Delay(n)
			if d < time.Second || d > time.Minute || d < lo {
				t.Fatalf("Delay(%d) = %s, want within [max(1s, %s), 1m]", n, d, lo)
			}
		}
	}
	if got := p.MinDelay(30); got != 48*time.Second {
		t.Errorf("MinDelay at the ceiling = %s, want 48s (1m less 20%% jitter)", got)
	}
}

func TestDefaultsAreOneSecondToOneMinute(t *testing.T) {
	var p backoff.Policy
	if p.MinDelay(0) != time.Second {
		t.Errorf("default floor %s", p.MinDelay(0))
	}
	for range 100 {
		if d := p.Delay(100); d > time.Minute || d < 48*time.Second {
			t.Fatalf("default ceiling: Delay(100) = %s", d)
		}
	}
}

func TestMaxAttempts(t *testing.T) {
	p := backoff.Policy{Floor: 100 * time.Millisecond, Ceiling: 400 * time.Millisecond, Jitter: -1}
	// Waits of 100, 200, 400, 400 …: attempts at 100, 300, 700, 1100.
	for _, tc := range []struct {
		window time.Duration
		want   int
	}{{50 * time.Millisecond, 0}, {100 * time.Millisecond, 1}, {299 * time.Millisecond, 1}, {300 * time.Millisecond, 2}, {time.Second, 3}, {1100 * time.Millisecond, 4}} {
		if got := p.MaxAttempts(tc.window); got != tc.want {
			t.Errorf("MaxAttempts(%s) = %d, want %d", tc.window, got, tc.want)
		}
	}
}
