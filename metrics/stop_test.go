package metrics

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
)

// blockingGates is a gate reader whose reads last until their context
// ends.
type blockingGates struct{ started, ended chan struct{} }

func (b blockingGates) GetGate(ctx context.Context, _ string) (gh.Gate, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- struct{}{}
	return gh.Gate{}, ctx.Err()
}

// A decision's lookup of a gate this process did not see open runs off
// the committing goroutine, and Stop ends it and waits for it: the run
// group owns it. After Stop, no lookup starts.
func TestStopWaitsForTheGateLookups(t *testing.T) {
	g := blockingGates{started: make(chan struct{}, 2), ended: make(chan struct{}, 2)}
	m := New(prometheus.NewRegistry(), Config{Gates: g, ScrapeTimeout: time.Minute})
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	decided, _ := json.Marshal(gh.GateDecided{GateID: "g-elsewhere", Decision: gh.GateApproved, Surface: "web"})
	ev := gh.Event{SessionID: "s1", Seq: 2, Kind: gh.KindGateDecided, Payload: decided, CreatedAt: time.Now()}
	m.Observe("s1", []gh.Event{ev})
	<-g.started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-g.ended:
	default:
		t.Fatal("Stop returned before the lookup ended")
	}
	m.Observe("s1", []gh.Event{ev})
	select {
	case <-g.started:
		t.Fatal("a lookup started after Stop")
	case <-time.After(50 * time.Millisecond):
	}
	var off *Metrics
	if err := off.Stop(ctx); err != nil || off.Start(ctx) != nil {
		t.Fatal("nil metrics must start and stop")
	}
}
