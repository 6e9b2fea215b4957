package store

import (
	"context"
	"time"
)

// StatsReader reads what the admin page charts: activity counted per time
// bucket, from the rows that record it (the receive log, settled runs,
// gates, the ledger). Every read is bounded by an indexed time column, so
// its cost follows the window's activity, not the tables' size.
type StatsReader interface {
	// Stats counts activity in [Since, Until) in buckets of Step: bucket
	// i covers [Since+i·Step, Since+(i+1)·Step). Rows of a bucket with
	// nothing in it are left out.
	Stats(ctx context.Context, q StatsQuery) (Stats, error)
}

// StatsQuery is the window and bucket width of a Stats read.
type StatsQuery struct {
	Since, Until time.Time
	Step         time.Duration
}

// Buckets is how many buckets the window holds.
func (q StatsQuery) Buckets() int {
	if q.Step <= 0 || !q.Until.After(q.Since) {
		return 0
	}
	return int((q.Until.Sub(q.Since) + q.Step - 1) / q.Step)
}

// Stats is a window's activity by bucket.
type Stats struct {
	// Receives counts receive-log rows by outcome (Key: handed_on,
	// dropped), by when they were received.
	Receives []StatsCount
	// Turns counts settled runs by state (Key: done, failed, cancelled),
	// by when they settled.
	Turns []StatsCount
	// TurnP95 is the 95th percentile of a bucket's settled runs' time
	// from queued to settled, in milliseconds (Key empty, Value the
	// time).
	TurnP95 []StatsValue
	// GatesOpened counts gates by when they were opened (Key: kind).
	GatesOpened []StatsCount
	// GatesDecided counts gates by when they were decided or expired (Key:
	// the state they reached).
	GatesDecided []StatsCount
	// Spend sums the ledger's model cost in USD by when it was recorded
	// (Key empty); Count is the model calls.
	Spend []StatsValue
}

// StatsCount is a count of one key in one bucket.
type StatsCount struct {
	Bucket int
	Key    string
	Count  int64
}

// StatsValue is a measure of one bucket.
type StatsValue struct {
	Bucket int
	Count  int64
	Value  float64
}

// P95 is the 95th percentile (nearest rank) of sorted values; 0 for none.
func P95(sorted []int64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := (95*len(sorted) + 99) / 100 // ceil(0.95·n), 1-based
	return sorted[rank-1]
}
