package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
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

// BenchEdgeCommit measures a kernel edge commit (validation, seq
// assignment, event insert and run upsert in one transaction) against the
// bare insert, in the same run, at each writer count. Each writer has its
// own session. Phases run bare, kernel, kernel, bare so that drift of the
// shared machine weighs on both sides alike. It reports p99-ratio
// (kernel p99 / bare p99; goal ≤ 2) and throughput-ratio (kernel ops/s /
// bare ops/s; goal ≥ 0.5). Run with a fixed count, e.g. -benchtime=4000x.
func BenchEdgeCommit(b *testing.B, target BenchTarget) {
	for _, writers := range WriterCounts {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			st, bare := target.Open(b)
			defer st.Close()
			ctx := context.Background()
			k := kernel.New(st, kernel.Config{})
			for w := range writers {
				if _, _, err := k.CreateSession(ctx, gh.Session{ID: fmt.Sprintf("bench-%d", w)}); err != nil {
					b.Fatal(err)
				}
			}
			n := max(b.N/2, writers)
			seq := make([]int64, writers) // bare seqs per writer
			keyN := make([]int, writers)  // kernel request ids per writer
			payload := func(w, i int) []byte {
				p, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("message %d from writer %d", i, w), "delivery": "queue"})
				return p
			}
			bareOp := func(w, i int) error {
				seq[w]++
				return bare(ctx, BareRow{SessionID: fmt.Sprintf("bench-%d", w), Seq: seq[w], Kind: string(gh.KindUserMessage),
					Payload: payload(w, i), Key: fmt.Sprintf("req-%d-%d", w, seq[w]), CreatedAt: time.Now().UTC()})
			}
			kernelOp := func(w, i int) error {
				keyN[w]++
				_, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: fmt.Sprintf("bench-%d", w), Event: gh.NewEvent{
					Kind: gh.KindUserMessage, Payload: payload(w, i), Key: fmt.Sprintf("req-%d-%d", w, keyN[w])}})
				return err
			}
			b.ResetTimer()
			var bareLat, kernelLat []time.Duration
			var bareTime, kernelTime time.Duration
			for _, phase := range []string{"bare", "kernel", "kernel", "bare"} {
				op := bareOp
				if phase == "kernel" {
					op = kernelOp
				}
				lat, took := RunPhase(b, writers, n/2, op)
				if phase == "bare" {
					bareLat, bareTime = append(bareLat, lat...), bareTime+took
				} else {
					kernelLat, kernelTime = append(kernelLat, lat...), kernelTime+took
				}
			}
			b.StopTimer()
			bp99, kp99 := P99(bareLat), P99(kernelLat)
			bareTput := float64(len(bareLat)) / bareTime.Seconds()
			kernelTput := float64(len(kernelLat)) / kernelTime.Seconds()
			b.ReportMetric(float64(kp99)/float64(bp99), "p99-ratio")
			b.ReportMetric(kernelTput/bareTput, "throughput-ratio")
			b.ReportMetric(float64(kp99.Microseconds()), "kernel-p99-µs")
			b.ReportMetric(float64(bp99.Microseconds()), "bare-p99-µs")
			b.ReportMetric(kernelTput, "kernel-ops/s")
			b.ReportMetric(bareTput, "bare-ops/s")
			// The kernel's log must hold exactly what was committed.
			for w := range writers {
				sess, err := st.GetSession(ctx, fmt.Sprintf("bench-%d", w))
				if err != nil || sess.LastSeq != int64(keyN[w]) {
					b.Fatalf("writer %d: session at seq %d after %d commits (%v)", w, sess.LastSeq, keyN[w], err)
				}
			}
		})
	}
}

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
