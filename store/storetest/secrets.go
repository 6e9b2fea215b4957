package storetest

import (
	"fmt"
	"sync"
	"testing"
)

// testSecrets: the first value stored under a name is the one every
// later call gets back, however many replicas race to store their own.
func testSecrets(t *testing.T, h Harness) {
	f := newFixture(t, h)
	const n = 16
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			v, err := f.st.EnsureSecret(f.ctx, "api-token", fmt.Sprintf("candidate-%d", i), f.clock.Now())
			if err != nil {
				t.Errorf("ensure: %v", err)
			}
			got[i] = v
		})
	}
	wg.Wait()
	first := got[0]
	if first == "" {
		t.Fatal("no secret stored")
	}
	for i, v := range got {
		if v != first {
			t.Fatalf("call %d got %q, call 0 got %q: replicas disagree on the secret", i, v, first)
		}
	}
	if v, err := f.st.EnsureSecret(f.ctx, "api-token", "later", f.clock.Now()); err != nil || v != first {
		t.Fatalf("a later start got %q (%v), want the stored %q", v, err, first)
	}
	if v, err := f.st.EnsureSecret(f.ctx, "other", "x", f.clock.Now()); err != nil || v != "x" {
		t.Fatalf("another name: %q %v", v, err)
	}
}
