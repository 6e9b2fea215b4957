package adaptertest

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/gateway"
)

// Eventually polls cond every 10 ms until it holds. After 10 s the test
// fails: the timeout only keeps a broken test from hanging.
func Eventually(t TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Connect runs a.Connect with sink until the test ends, and fails the
// test when Connect does not return nil within within of its context
// ending: an adapter must stop promptly and cleanly.
func Connect(t TB, a gateway.Adapter, sink gateway.Sink, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Connect(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Connect returned %v after its context ended, want nil", err)
			}
		case <-time.After(within):
			t.Errorf("Connect did not return within %s of its context ending", within)
		}
	})
}
