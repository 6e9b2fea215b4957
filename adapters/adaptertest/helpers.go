package adaptertest

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
)

// Eventually polls cond until it holds, failing the test after a while:
// it is testenv.Eventually, here for the fakes and the adapters' tests.
func Eventually(t TB, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, what, cond)
}

// WaitReceive returns the first receive-log row of a platform update,
// waiting for it: the suite and the whole-stack harness both ask this.
func WaitReceive(t TB, ctx context.Context, st store.Store, platform, update string) store.ReceiveEntry {
	t.Helper()
	var row store.ReceiveEntry
	Eventually(t, "receive-log row of update "+update, func() bool {
		r, ok, err := st.ReceiveByUpdate(ctx, platform, update)
		row = r
		return err == nil && ok
	})
	return row
}

// Connect runs a.Connect with sink until the test ends, and fails the
// test when Connect does not return nil within within of its context
// ending: an adapter must stop promptly and cleanly.
func Connect(t TB, a chat.Adapter, sink chat.Sink, within time.Duration) {
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

// LogWriter writes log lines to t until the test has ended (testing
// panics on a log after that, and an adapter's last words may come late).
func LogWriter(t TB) io.Writer {
	w := &tbLog{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

type tbLog struct {
	mu   sync.Mutex
	t    TB
	done bool
}

func (w *tbLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Logf("%s", bytes.TrimRight(p, "\n"))
	}
	return len(p), nil
}
