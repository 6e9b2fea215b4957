package store

import "sync"

// Broadcast wakes every waiter at once: WaitC returns a channel that the next
// Signal closes. Both backends use it for in-process wake-ups; Postgres also
// signals it from LISTEN/NOTIFY.
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// WaitC returns a channel closed by the next Signal.
func (b *Broadcast) WaitC() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Signal wakes everyone waiting now.
func (b *Broadcast) Signal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
