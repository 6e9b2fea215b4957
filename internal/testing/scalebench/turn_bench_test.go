package scalebench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// BenchmarkScaleTurn measures a simple turn (input → claim → the
// zero-latency model's answer → run done) on a database holding 100,000
// answered sessions and 1,000,000 events against the same turn on an
// empty database, both open in the same run (goal: scale-cost-ratio ≤
// 1.2 on both stores). The "empty" database holds only the few old
// sessions the measurement takes turns on.
//
// Turns alternate between the two databases (which goes first swaps
// every round, so drift weighs on both alike), on fresh sessions and on
// old, bulk-written ones spread over the whole big database. Reported:
// the ratio of the medians for each kind of session and over all turns
// (scale-cost-ratio), the medians themselves and how long the fill took.
// The work is fixed (GATEHOUSE_SCALE_TURNS rounds, default 40); run with
// -benchtime=1x. GATEHOUSE_SCALE_SESSIONS (default 100000) sizes the big
// database, ten events a session.
func BenchmarkScaleTurn(b *testing.B) {
	sessions := envInt(b, "GATEHOUSE_SCALE_SESSIONS", 100_000)
	rounds := envInt(b, "GATEHOUSE_SCALE_TURNS", 40)
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			type side struct {
				name        string
				d           *db
				f           fill
				s           *turnStack
				olds        []string
				fresh, aged []time.Duration
			}
			empty := &side{name: "empty", d: openDB(b, backend), f: newFill("old-", rounds)}
			big := &side{name: "big", d: openDB(b, backend), f: newFill("old-", sessions)}
			start := time.Now()
			big.d.load(b, big.f)
			fillTook := time.Since(start)
			empty.d.load(b, empty.f)
			for _, sd := range []*side{empty, big} {
				sd.s = startTurns(b, sd.d.st)
				// The bulk rows read as real sessions through the kernel …
				for _, i := range []int{0, 1, sd.f.sessions - 1} {
					must(b, verifyFilled(ctx, sd.s.k, sd.f, i))
				}
				// … a real turn commits what the fill writes …
				_, _, err := sd.s.k.CreateSession(ctx, gh.Session{ID: "probe"})
				must(b, err)
				must(b, checkShape(ctx, sd.s.k, "probe", sd.s.turn(b, "probe")))
				// … and an old session takes a turn like a live one.
				must(b, verifyAfterTurn(ctx, sd.s.k, sd.f, 1, sd.s.turn(b, sd.f.id(1))))
				// Old sessions to take turns on, spread over the database.
				for r := range rounds {
					sd.olds = append(sd.olds, sd.f.id(2+r*(sd.f.sessions-2)/rounds))
				}
				// Warm-up: connections, caches, the planner.
				for w := range 5 {
					id := fmt.Sprintf("warm-%d", w)
					_, _, err := sd.s.k.CreateSession(ctx, gh.Session{ID: id})
					must(b, err)
					sd.s.turn(b, id)
				}
			}
			b.ResetTimer()
			for r := range rounds {
				order := []*side{empty, big}
				if r%2 == 1 {
					order = []*side{big, empty}
				}
				for _, sd := range order {
					id := fmt.Sprintf("fresh-%d", r)
					_, _, err := sd.s.k.CreateSession(ctx, gh.Session{ID: id})
					must(b, err)
					t0 := time.Now()
					sd.s.turn(b, id)
					sd.fresh = append(sd.fresh, time.Since(t0))
					t0 = time.Now()
					sd.s.turn(b, sd.olds[r])
					sd.aged = append(sd.aged, time.Since(t0))
				}
			}
			b.StopTimer()
			all := func(sd *side) time.Duration {
				return median(append(append([]time.Duration{}, sd.fresh...), sd.aged...))
			}
			ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
			b.ReportMetric(ratio(all(big), all(empty)), "scale-cost-ratio")
			b.ReportMetric(ratio(median(big.fresh), median(empty.fresh)), "fresh-session-ratio")
			b.ReportMetric(ratio(median(big.aged), median(empty.aged)), "old-session-ratio")
			b.ReportMetric(float64(all(empty).Microseconds())/1000, "empty-turn-ms")
			b.ReportMetric(float64(all(big).Microseconds())/1000, "big-turn-ms")
			b.ReportMetric(float64(sessions), "big-sessions")
			b.ReportMetric(fillTook.Seconds(), "fill-s")
			b.Logf("%s: medians fresh %v / %v, old %v / %v (big / empty); fill of %d sessions took %v",
				backend, median(big.fresh), median(empty.fresh), median(big.aged), median(empty.aged), sessions, fillTook.Round(time.Millisecond))
		})
	}
}

// verifyAfterTurn checks that run, the new turn of bulk-written session
// i, continued its log where the fill left it: four events after the
// fill's, the input first, the run's end last.
func verifyAfterTurn(ctx context.Context, k *kernel.Kernel, f fill, i int, run int64) error {
	want := f.session(i)
	evs, err := k.Load(ctx, want.id)
	if err != nil {
		return err
	}
	n := len(want.events)
	if len(evs) != n+4 || evs[n].Seq != want.lastSeq+1 || evs[n].Kind != gh.KindUserMessage || evs[n+3].Kind != gh.KindRunFinished {
		return fmt.Errorf("session %s after a turn: %d events, want %d ending in a turn of 4", want.id, len(evs), n+4)
	}
	var fin gh.RunFinished
	if err := json.Unmarshal(evs[n+3].Payload, &fin); err != nil || fin.RunID != run || fin.Status != "done" {
		return fmt.Errorf("session %s: turn ended with %s (%v)", want.id, evs[n+3].Payload, err)
	}
	return nil
}
