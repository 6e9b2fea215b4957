package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// BareRow is one row of the bare baseline: the same columns as an event.
type BareRow struct {
	SessionID string
	Seq       int64
	Kind      string
	Payload   []byte
	Key       string
	CreatedAt time.Time
}

// BenchTarget is a backend under benchmark: a fresh store, and a bare
// single-row INSERT into a table equivalent to the events table (same
// columns, primary key and idempotency index) on the same connections.
type BenchTarget struct {
	Open func(b *testing.B) (st store.Store, bareInsert func(ctx context.Context, r BareRow) error)
}

// WriterCounts are the concurrency levels the benchmark measures.
var WriterCounts = []int{1, 8, 32}

// RunPhase runs ops spread over writers goroutines, each writer doing its
// share sequentially, and returns every op's latency and the wall time.
func RunPhase(b *testing.B, writers, ops int, op func(w, i int) error) ([]time.Duration, time.Duration) {
	per := max(ops/writers, 1)
	lat := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			lat[w] = make([]time.Duration, 0, per)
			for i := range per {
				t0 := time.Now()
				if err := op(w, i); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	return slices.Concat(lat...), took
}

// P99 is the 99th percentile of d.
func P99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*99/100)]
}
