package store

import (
	"context"
	"time"
)

// Secrets keeps the secrets the gateway makes for itself (the API token
// when none is configured) in the database, so that every replica on one
// database holds the same one and a restart keeps it.
type Secrets interface {
	// EnsureSecret stores value under name unless a secret of that name
	// is already there, and returns the stored secret: the first replica
	// to start decides it, every later start reads it back. Concurrent
	// calls with different values all return the one that was stored.
	EnsureSecret(ctx context.Context, name, value string, now time.Time) (string, error)
}
