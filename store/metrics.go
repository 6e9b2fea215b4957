package store

import (
	"context"
	"time"
)

// MetricsReader reads the gauges /metrics computes at scrape time. Each
// read is over a partial index (runs_queued, outbox_open), so its cost
// follows what is waiting, not the tables' size.
type MetricsReader interface {
	// QueueStats counts the runs waiting for a worker and the outbox
	// rows waiting to be sent.
	QueueStats(ctx context.Context) (QueueStats, error)
}

// QueueStats is the queue of runs at one moment.
type QueueStats struct {
	// Queued counts runs in state queued, claimable now or later (a retry
	// waiting out its backoff included).
	Queued int64
	// OldestAvailable is the earliest time a queued run became
	// claimable, among those claimable now; zero when none is.
	OldestAvailable time.Time
	// Outbox is the outbox rows not yet sent (pending or sending), by
	// platform; platforms with none are left out.
	Outbox []OutboxQueue
}

// OutboxQueue is one platform's unsent outbox rows.
type OutboxQueue struct {
	Platform string
	Open     int64
	// Oldest is when the oldest of them was enqueued.
	Oldest time.Time
}
