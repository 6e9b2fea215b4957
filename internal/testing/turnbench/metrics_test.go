package turnbench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/metrics"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// BenchmarkMetricsOverhead runs the approval turn (as
// BenchmarkApprovalTurn, 4 sessions at a time) with package metrics off
// and on, in one run, and reports the time per turn of each and the
// overhead of on over off (issue 14: goal ≤ 5%): the median of the
// rounds' on÷off, and the ratio of the totals. Two identical stacks
// each carry metrics behind a switch; the turns run in rounds, and each
// round one stack has its metrics on (observer, ledger wrapper, and a
// scrape with the queue read at the round's end) and the other off (the
// switch returns at once: what is left of off is one atomic load per
// commit). Which stack is on and which runs first alternate, so neither
// a stack's own speed nor the order weighs on one side. Run with
// -benchtime=400x or more: the figure is a difference of two noisy ones.
func BenchmarkMetricsOverhead(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) { benchMetricsOverhead(b, backend) })
	}
}

func benchMetricsOverhead(b *testing.B, backend string) {
	const c, rounds = 4, 8
	ctx := context.Background()
	var stacks [2]*stack
	var sws [2]*switched
	for i := range stacks {
		q := &lateQueue{}
		reg := prometheus.NewRegistry()
		sws[i] = &switched{m: metrics.New(reg, metrics.Config{Queue: q}), reg: reg}
		stacks[i] = newStackWith(b, backend, sws[i])
		q.st = stacks[i].store // the scrape-time read goes to the stack's own store
		if _, err := stacks[i].runConversations(ctx, "warm", turnsPerSession, turnsPerSession, 1); err != nil {
			b.Fatal(err)
		}
		stacks[i].quiesce()
	}
	per := max(b.N/rounds/turnsPerSession, c) * turnsPerSession
	var took [2]time.Duration // [0] off, [1] on
	ratios := make([]float64, 0, rounds)
	b.ResetTimer()
	for r := range rounds {
		var round [2]time.Duration
		onStack := r % 2
		sws[onStack].on.Store(true)
		sws[1-onStack].on.Store(false)
		for j := range 2 {
			i := (j + r/2) % 2
			on := 0
			if i == onStack {
				on = 1
			}
			start := time.Now()
			if _, err := stacks[i].runConversations(ctx, fmt.Sprintf("r%d", r), per, turnsPerSession, c); err != nil {
				b.Fatal(err)
			}
			if on == 1 {
				if _, err := sws[i].reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
			round[on] = time.Since(start)
			took[on] += round[on]
			stacks[i].quiesce()
		}
		ratios = append(ratios, round[1].Seconds()/round[0].Seconds())
	}
	b.StopTimer()
	started := counterSum(b, sws[0].reg, "gatehouse_turns_started_total") + counterSum(b, sws[1].reg, "gatehouse_turns_started_total")
	if want := float64(rounds * per); started < want {
		b.Fatalf("metrics on counted %v turns started, want at least %v", started, want)
	}
	turns := float64(rounds * per) // each round ran per turns on each side
	offMs, onMs := took[0].Seconds()*1000/turns, took[1].Seconds()*1000/turns
	b.ReportMetric(offMs, "ms/turn-off")
	b.ReportMetric(onMs, "ms/turn-on")
	// The median of the rounds' ratios: a round slowed by the rest of
	// the machine moves it less than it moves the totals.
	slices.Sort(ratios)
	median := (ratios[rounds/2-1] + ratios[rounds/2]) / 2
	b.ReportMetric((median-1)*100, "overhead-%")
	b.ReportMetric((onMs/offMs-1)*100, "overhead-total-%")
}

// switched is a stack's metrics behind a switch.
type switched struct {
	on  atomic.Bool
	m   *metrics.Metrics
	reg *prometheus.Registry
}

func (s *switched) Observe(sessionID string, events []gh.Event) {
	if s.on.Load() {
		s.m.Observe(sessionID, events)
	}
}

func (s *switched) Ledger(next func(context.Context, models.LedgerRow)) func(context.Context, models.LedgerRow) {
	counted := s.m.Ledger(next)
	return func(ctx context.Context, row models.LedgerRow) {
		if s.on.Load() {
			counted(ctx, row)
			return
		}
		next(ctx, row)
	}
}

// lateQueue is a store.MetricsReader set once the stack exists.
type lateQueue struct{ st store.MetricsReader }

func (q *lateQueue) QueueStats(ctx context.Context) (store.QueueStats, error) {
	return q.st.QueueStats(ctx)
}

func counterSum(b *testing.B, reg *prometheus.Registry, name string) float64 {
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}
