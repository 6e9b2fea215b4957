package platformfake

import (
	"net/http"
	"sync"
	"time"
)

// Mount serves an adapter's webhook handler for a test while the
// adapter's Connect runs, standing in for the gateway's HTTP server.
// Between Connects it answers 503 and the fake delivers again later.
type Mount struct {
	// FirstWait is how long a request that comes before the first
	// Connect waits for it; zero: not at all.
	FirstWait time.Duration

	mu    sync.Mutex
	h     http.Handler
	ready chan struct{} // closed on the first Connect
	once  sync.Once
}

func (m *Mount) readyCh() chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready == nil {
		m.ready = make(chan struct{})
	}
	return m.ready
}

// While serves h until connect returns, and returns what it returned.
func (m *Mount) While(h http.Handler, connect func() error) error {
	ready := m.readyCh()
	m.mu.Lock()
	m.h = h
	m.mu.Unlock()
	m.once.Do(func() { close(ready) })
	defer func() {
		m.mu.Lock()
		m.h = nil
		m.mu.Unlock()
	}()
	return connect()
}

// ServeHTTP hands the request to the handler being served, or answers
// 503 when none is.
func (m *Mount) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if m.FirstWait > 0 {
		// A delivery may beat the first Connect by a moment.
		select {
		case <-m.readyCh():
		case <-time.After(m.FirstWait):
		case <-r.Context().Done():
		}
	}
	m.mu.Lock()
	h := m.h
	m.mu.Unlock()
	if h == nil {
		http.Error(rw, "not connected", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(rw, r)
}
