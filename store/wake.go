package store

import (
	"context"
	"sync"

	gh "github.com/gatehouse/gatehouse"
)

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

// Relay is implemented by a backend shared by several processes
// (Postgres): a session's events committed by another process reach this
// one's subscribers without a read.
type Relay interface {
	// Follow records that this process streams the session, and returns
	// once other processes' commits to it will be delivered to the
	// OnRemote handler; release ends it.
	Follow(ctx context.Context, sessionID string) (release func(), err error)
	// OnRemote sets the handler of other processes' commits: their
	// events when they fit in a notification (complete), or only that
	// the session changed (read it).
	OnRemote(h func(sessionID string, events []gh.Event, complete bool))
}
