package kerneltest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// BenchEdgeCommit measures a kernel edge commit (validation, seq
// assignment, event insert and run upsert in one transaction) against the
// bare insert, in the same run, at each writer count. Each writer has its
// own session. Phases run bare, kernel, kernel, bare so that drift of the
// shared machine weighs on both sides alike. It reports p99-ratio
// (kernel p99 / bare p99; goal ≤ 2) and throughput-ratio (kernel ops/s /
// bare ops/s; goal ≥ 0.5). Run with a fixed count, e.g. -benchtime=4000x.
func BenchEdgeCommit(b *testing.B, target storetest.BenchTarget) {
	for _, writers := range storetest.WriterCounts {
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
				return bare(ctx, storetest.BareRow{SessionID: fmt.Sprintf("bench-%d", w), Seq: seq[w], Kind: string(gh.KindUserMessage),
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
				lat, took := storetest.RunPhase(b, writers, n/2, op)
				if phase == "bare" {
					bareLat, bareTime = append(bareLat, lat...), bareTime+took
				} else {
					kernelLat, kernelTime = append(kernelLat, lat...), kernelTime+took
				}
			}
			b.StopTimer()
			bp99, kp99 := storetest.P99(bareLat), storetest.P99(kernelLat)
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
