package metrics

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

func ev(kind gh.Kind, at time.Time, payload any) gh.Event {
	raw, _ := json.Marshal(payload)
	return gh.Event{SessionID: "s1", Kind: kind, Payload: raw, CreatedAt: at}
}

func TestObserveMapsEventsToSeries(t *testing.T) {
	m := New(prometheus.NewRegistry(), Config{})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.Observe("s1", []gh.Event{
		ev(gh.KindRunStarted, t0, gh.RunStarted{RunID: 1, Attempt: 1}),
		ev(gh.KindGateOpened, t0, gh.GateOpened{GateID: "g1", Kind: gh.GateKindApproval}),
		ev(gh.KindRunFinished, t0, gh.RunFinished{RunID: 1, Status: "awaiting_approval", DurationMs: 1500}),
	})
	m.Observe("s1", []gh.Event{ev(gh.KindGateDecided, t0.Add(90*time.Second), gh.GateDecided{GateID: "g1", Decision: gh.GateApproved, Surface: "telegram"})})
	m.Observe("s1", []gh.Event{
		ev(gh.KindRunStarted, t0, gh.RunStarted{RunID: 1, Attempt: 2, TookOver: true}),
		ev(gh.KindReceipt, t0, map[string]string{"state": "started"}),
		ev(gh.KindToolResult, t0, gh.ToolResult{ToolCallID: "c1"}),
		ev(gh.KindReceipt, t0, map[string]string{"state": "finished"}),
		ev(gh.KindNotice, t0, gh.Notice{Code: NoticeModelFallback}),
		ev(gh.KindNotice, t0, gh.Notice{Code: NoticeBudgetAlert}),
		ev(gh.KindNotice, t0, gh.Notice{Code: "guide-queued"}),
		ev(gh.KindRunFinished, t0, gh.RunFinished{RunID: 1, Status: "done", DurationMs: 250, StopReason: StopEffectUnknown}),
	})
	// A surface or status nobody knows is folded, never a new series.
	m.Observe("s2", []gh.Event{
		ev(gh.KindGateDecided, t0, gh.GateDecided{GateID: "g9", Decision: gh.GateExpired, Surface: "chat-12345"}),
		ev(gh.KindRunFinished, t0, gh.RunFinished{Status: "weird-9", StopReason: StopBudgetExhausted}),
		{Kind: gh.KindRunStarted, Payload: json.RawMessage(`not json`)},
	})

	for name, c := range map[string]struct {
		got  float64
		want float64
	}{
		"turns started":             {val(t, m.turnsStarted), 2},
		"takeovers":                 {val(t, m.takeovers), 1},
		"settled awaiting":          {val(t, m.turnsSettled, "awaiting_approval"), 1},
		"settled done":              {val(t, m.turnsSettled, "done"), 1},
		"settled other":             {val(t, m.turnsSettled, "other"), 1},
		"gates opened":              {val(t, m.gatesOpened, "approval"), 1},
		"decided approved/telegram": {val(t, m.gatesDecided, "approved", "telegram"), 1},
		"decided expired/other":     {val(t, m.gatesDecided, "expired", "other"), 1},
		"expired":                   {val(t, m.gatesExpired), 1},
		"effects started":           {val(t, m.effects, "started"), 1},
		"effects finished":          {val(t, m.effects, "finished"), 1},
		"effects unknown":           {val(t, m.effects, "unknown"), 1},
		"fallbacks":                 {val(t, m.fallbacks), 1},
		"budget alert":              {val(t, m.budget, "alert"), 1},
		"budget exhausted":          {val(t, m.budget, "exhausted"), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	if n := count(m.turnsSettled); n != 3 {
		t.Errorf("settled series = %d, want 3 (done, awaiting_approval, other)", n)
	}
	// g1 was seen open here: its decision is timed, 90s; g9 was not (no
	// GateOpenedAt): counted, not timed.
	if h := metricsOf(m.gateSeconds); len(h) != 1 || h[0].GetHistogram().GetSampleSum() != 90 || h[0].GetHistogram().GetSampleCount() != 1 ||
		h[0].GetLabel()[0].GetValue() != "approved" {
		t.Errorf("time to decision: %v", h)
	}
}

func TestDecisionOfAGateOpenedElsewhereIsTimedFromTheStore(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	asked := make(chan string, 1)
	m := New(nil, Config{Gates: gateRows(func(id string) (gh.Gate, error) {
		asked <- id
		return gh.Gate{ID: id, Created: t0}, nil
	})})
	m.Observe("s1", []gh.Event{ev(gh.KindGateDecided, t0.Add(10*time.Second), gh.GateDecided{GateID: "g2", Decision: gh.GateDenied, Surface: "web"})})
	if id := <-asked; id != "g2" {
		t.Fatalf("asked for %q", id)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(m.gateSeconds) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := count(m.gateSeconds); n != 1 {
		t.Fatalf("decision not timed (%d series)", n)
	}
}

func TestLedgerCountsCallsAndHandsThemOn(t *testing.T) {
	m := New(nil, Config{MaxModels: 2})
	var passed int
	hook := m.Ledger(func(context.Context, models.LedgerRow) { passed++ })
	hook(context.Background(), models.LedgerRow{Provider: "openai", Model: "a", InputTokens: 10, OutputTokens: 3, CostUSD: 0.5, Duration: time.Second})
	hook(context.Background(), models.LedgerRow{Provider: "openai", Model: "a", Err: "429"})
	hook(context.Background(), models.LedgerRow{Provider: "anthropic", Model: "b"})
	hook(context.Background(), models.LedgerRow{Provider: "openai", Model: "c"}) // past MaxModels
	if passed != 4 {
		t.Fatalf("handed on %d rows, want 4", passed)
	}
	for name, c := range map[string]struct{ got, want float64 }{
		"calls ok":     {val(t, m.modelCalls, "openai", "a", "ok"), 1},
		"calls error":  {val(t, m.modelCalls, "openai", "a", "error"), 1},
		"errors":       {val(t, m.modelErrors, "openai", "a"), 1},
		"tokens in":    {val(t, m.modelTokens, "openai", "a", "input"), 10},
		"tokens out":   {val(t, m.modelTokens, "openai", "a", "output"), 3},
		"cost":         {val(t, m.modelCost, "openai", "a"), 0.5},
		"capped model": {val(t, m.modelCalls, "openai", "other", "ok"), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	var off *Metrics
	if off.Ledger(nil) != nil {
		t.Error("metrics off must leave the hook as it was")
	}
	off.Observe("s1", []gh.Event{ev(gh.KindRunStarted, time.Now(), gh.RunStarted{})}) // no panic
}

type queue struct {
	q   store.QueueStats
	err error
}

func (f queue) QueueStats(context.Context) (store.QueueStats, error) { return f.q, f.err }

func TestScrapeReadsTheQueueAndIncidents(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	New(reg, Config{Now: func() time.Time { return now },
		Queue: queue{q: store.QueueStats{Queued: 3, OldestAvailable: now.Add(-42 * time.Second),
			Outbox: []store.OutboxQueue{{Platform: "telegram", Open: 2, Oldest: now.Add(-7 * time.Second)}}}}})
	for name, want := range map[string]float64{
		"gatehouse_incidents_open": 0, "gatehouse_outbox_lag_seconds": 7, "gatehouse_outbox_unsent": 2,
		"gatehouse_runs_oldest_queued_age_seconds": 42, "gatehouse_runs_queued": 3, "gatehouse_metrics_store_read_ok": 1,
	} {
		if got, ok := gauge(t, reg, name); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// A store that does not answer: the queue series are left out and
	// the read is reported failed; the scrape still answers.
	reg2 := prometheus.NewRegistry()
	New(reg2, Config{Logger: slog.New(slog.DiscardHandler), Queue: queue{err: gh.Errorf(gh.CodeUnavailable, "down")}, Incidents: func(context.Context) (int, error) { return 2, nil }})
	if got, _ := gauge(t, reg2, "gatehouse_incidents_open"); got != 2 {
		t.Errorf("incidents = %v, want 2", got)
	}
	if got, ok := gauge(t, reg2, "gatehouse_metrics_store_read_ok"); !ok || got != 0 {
		t.Errorf("store read ok = %v (present %v), want 0", got, ok)
	}
	if _, ok := gauge(t, reg2, "gatehouse_runs_queued"); ok {
		t.Error("runs queued reported from a store that did not answer")
	}
}

// metricsOf collects c's series.
func metricsOf(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err == nil {
			out = append(out, &d)
		}
	}
	return out
}

func count(c prometheus.Collector) int { return len(metricsOf(c)) }

// val is the value of c's series with these label values (any order), 0
// when it has none.
func val(t *testing.T, c prometheus.Collector, labels ...string) float64 {
	t.Helper()
next:
	for _, m := range metricsOf(c) {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		// The series' labels come sorted by name: compare the values as a
		// set.
		have := map[string]int{}
		for _, l := range m.GetLabel() {
			have[l.GetValue()]++
		}
		for _, v := range labels {
			if have[v]--; have[v] < 0 {
				continue next
			}
		}
		return m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return 0
}

// gauge is the value of the first series of the family name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

type gateRows func(id string) (gh.Gate, error)

func (f gateRows) GetGate(_ context.Context, id string) (gh.Gate, error) { return f(id) }

func TestRegistryOffCountsNothing(t *testing.T) {
	reg, m := Registry(false, Config{})
	if m != nil {
		t.Fatal("metrics built with off")
	}
	if m.Kernel(kernel.Config{}).Observer != nil {
		t.Error("metrics off gave the kernel an observer")
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "gatehouse_") {
			t.Errorf("off exports %s", f.GetName())
		}
	}
	if len(fams) == 0 {
		t.Error("off exports nothing: Go's and the process's series are wanted")
	}
	reg, m = Registry(true, Config{})
	if m.Kernel(kernel.Config{}).Observer == nil {
		t.Error("metrics on gave the kernel no observer")
	}
	if _, ok := gauge(t, reg, "gatehouse_incidents_open"); !ok {
		t.Error("on: gatehouse_incidents_open missing")
	}
}
