package metrics

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// On each backend, through the real kernel: a message queues a run that
// the queue gauges see, and its claim is observed as a turn started; the
// input itself moves no turn series.
func TestQueueAndObserverOnTheStores(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			st := storetest.Open(t, backend)
			reg := prometheus.NewRegistry()
			m := New(reg, Config{Queue: st, Gates: st})
			k := kernel.New(st, m.Kernel(kernel.Config{}))
			if q, err := st.QueueStats(ctx); err != nil || q.Queued != 0 || !q.OldestAvailable.IsZero() || len(q.Outbox) != 0 {
				t.Fatalf("empty store: %+v %v", q, err)
			}
			if _, _, err := k.CreateSession(ctx, gh.Session{ID: "s1"}); err != nil {
				t.Fatal(err)
			}
			payload, _ := json.Marshal(gh.UserMessage{Text: "hi", Delivery: gh.DeliveryQueue})
			if _, err := k.EdgeCommit(ctx, kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload, Key: "r1"}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // the run's age, read at scrape time
			if got, ok := gauge(t, reg, "gatehouse_runs_queued"); !ok || got != 1 {
				t.Errorf("runs queued = %v (present %v), want 1", got, ok)
			}
			if got, _ := gauge(t, reg, "gatehouse_runs_oldest_queued_age_seconds"); got <= 0 || got > 60 {
				t.Errorf("oldest queued age = %v, want a few ms", got)
			}
			if n := val(t, m.turnsStarted); n != 0 {
				t.Errorf("an input counted as %v turns started", n)
			}
			if _, ok, err := k.Claim(ctx, "w1"); err != nil || !ok {
				t.Fatalf("claim: %v %v", ok, err)
			}
			if n := val(t, m.turnsStarted); n != 1 {
				t.Errorf("turns started after a claim = %v, want 1", n)
			}
			if got, _ := gauge(t, reg, "gatehouse_runs_queued"); got != 0 {
				t.Errorf("runs queued after the claim = %v, want 0", got)
			}
		})
	}
}
