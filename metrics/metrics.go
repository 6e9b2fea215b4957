package metrics

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/inflight"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// Config is what the scrape-time gauges read. Every field is optional.
type Config struct {
	// Queue reads the queue gauges (runs queued, oldest queued run, unsent
	// outbox rows). Defaults to none: those series are left out.
	Queue store.MetricsReader
	// Incidents counts the incidents open, at scrape time. Defaults to
	// none: gatehouse_incidents_open reads 0. This is the hook the
	// incidents (issue 14, part 1) plug into.
	Incidents func(ctx context.Context) (int, error)
	// Gates reads a gate's row, to time a decision on a gate this
	// process did not see open (opened by another replica, or before a
	// restart); read off the committing goroutine. Defaults to none: such
	// decisions are counted, not timed.
	Gates GateReader
	// ScrapeTimeout bounds the scrape-time reads. Defaults to 5s.
	ScrapeTimeout time.Duration
	// MaxModels caps the provider/model label pairs; calls of pairs past
	// it are counted under model "other". Defaults to 50.
	MaxModels int
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger reports failed scrape-time reads. Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.ScrapeTimeout <= 0 {
		c.ScrapeTimeout = 5 * time.Second
	}
	if c.MaxModels <= 0 {
		c.MaxModels = 50
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// GateReader reads a gate's row (store.Store is one).
type GateReader interface {
	GetGate(ctx context.Context, id string) (gh.Gate, error)
}

// Registry returns the registry /metrics serves, holding Go's and the
// process's collectors, and with on the metrics built in it from cfg; off
// (GATEHOUSE_METRICS=off), the metrics are nil, which count nothing.
func Registry(on bool, cfg Config) (*prometheus.Registry, *Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if !on {
		return reg, nil
	}
	return reg, New(reg, cfg)
}

// Kernel returns kc with Observe as its observer; kc as it is when m is
// nil (metrics off: the kernel calls nothing).
func (m *Metrics) Kernel(kc kernel.Config) kernel.Config {
	if m != nil {
		kc.Observer = m.Observe
	}
	return kc
}

// Metrics holds the collectors. Its methods are safe for concurrent use;
// a nil *Metrics does nothing (metrics off).
type Metrics struct {
	cfg Config

	turnsStarted prometheus.Counter
	takeovers    prometheus.Counter
	turnsSettled *prometheus.CounterVec
	turnSeconds  *prometheus.HistogramVec
	gatesOpened  *prometheus.CounterVec
	gatesDecided *prometheus.CounterVec
	gatesExpired prometheus.Counter
	gateSeconds  *prometheus.HistogramVec
	effects      *prometheus.CounterVec
	fallbacks    prometheus.Counter
	budget       *prometheus.CounterVec
	modelCalls   *prometheus.CounterVec
	modelSeconds *prometheus.HistogramVec
	modelTokens  *prometheus.CounterVec
	modelCost    *prometheus.CounterVec
	modelErrors  *prometheus.CounterVec
	scrape       *scrapeCollector
	opened       openedGates
	mu           sync.Mutex
	models       map[[2]string]struct{}

	// lookups are the gate reads timeDecision starts off the committing
	// goroutine; Stop ends them (stop) and waits, so the run group owns
	// them.
	lookups inflight.Group
	stop    context.CancelFunc
	stopCtx context.Context
}

// Start implements the run group's service: the lookups need nothing
// started (they run from New on, for tests that never start one).
func (m *Metrics) Start(context.Context) error { return nil }

// Stop cancels the gate lookups still running and waits for them, within
// ctx; a decision observed after Stop is timed only from an opening this
// process saw.
func (m *Metrics) Stop(ctx context.Context) error {
	if m == nil {
		return nil
	}
	m.stop()
	return m.lookups.Wait(ctx)
}

// New builds the collectors and registers them with reg (none: counted,
// not exported).
func New(reg prometheus.Registerer, cfg Config) *Metrics {
	cfg = cfg.withDefaults()
	secs := []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	m := &Metrics{cfg: cfg, models: map[[2]string]struct{}{}, opened: newOpenedGates(10000),
		turnsStarted: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_turns_started_total",
			Help: "Turn attempts started (run.started), retries and takeovers included."}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_lease_takeovers_total",
			Help: "Attempts that took a run over from a worker whose lease lapsed."}),
		turnsSettled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_turns_settled_total",
			Help: "Turn attempts settled (run.finished), by status: done, awaiting_approval, failed, cancelled, other."}, []string{"status"}),
		turnSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_turn_duration_seconds",
			Help: "Time of a turn attempt from its claim to its settle, by status.", Buckets: secs}, []string{"status"}),
		gatesOpened: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_gates_opened_total",
			Help: "Gates opened (gate.opened), by kind: approval or clarify."}, []string{"kind"}),
		gatesDecided: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_gates_decided_total",
			Help: "Gate decisions committed (gate.decided, once per gate), by decision (approved, denied, answered, expired) and surface (telegram, discord, slack, web, api, gateway, other)."},
			[]string{"decision", "surface"}),
		gatesExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_gates_expired_total",
			Help: "Gates nobody decided in time (also in gatehouse_gates_decided_total, decision expired)."}),
		gateSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_gate_decision_seconds",
			Help: "Time from a gate's opening to its decision, by decision.", Buckets: []float64{1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600}},
			[]string{"decision"}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_effects_total",
			Help: "Effects by receipt: started (before the call runs), finished (result committed), unknown (a turn stopped because an effect's outcome is unknown)."},
			[]string{"state"}),
		fallbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "gatehouse_model_fallbacks_total",
			Help: "Turns that fell back to another model (model-fallback notices)."}),
		budget: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_budget_total",
			Help: "Daily budget events (GATEHOUSE_DAILY_BUDGET_USD): alert (a person passed the alert share), exhausted (a turn stopped at the budget)."},
			[]string{"event"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_model_calls_total",
			Help: "Model call attempts (ledger rows), by provider, model and outcome (ok, error)."}, []string{"provider", "model", "outcome"}),
		modelSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gatehouse_model_call_seconds",
			Help: "Latency of one model call attempt.", Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}}, []string{"provider", "model"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_model_tokens_total",
			Help: "Tokens of model calls, by provider, model and direction (input, output)."}, []string{"provider", "model", "direction"}),
		modelCost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_model_cost_usd_total",
			Help: "Cost of model calls in US dollars (GATEHOUSE_PRICES), by provider and model."}, []string{"provider", "model"}),
		modelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gatehouse_model_errors_total",
			Help: "Model call attempts that failed, by provider and model."}, []string{"provider", "model"}),
	}
	m.scrape = newScrapeCollector(cfg)
	if reg != nil {
		reg.MustRegister(m.turnsStarted, m.takeovers, m.turnsSettled, m.turnSeconds, m.gatesOpened, m.gatesDecided,
			m.gatesExpired, m.gateSeconds, m.effects, m.fallbacks, m.budget, m.modelCalls, m.modelSeconds, m.modelTokens,
			m.modelCost, m.modelErrors, m.scrape)
	}
	m.stopCtx, m.stop = context.WithCancel(context.Background())
	return m
}

// Observe counts a local commit's events: pass it as kernel.Config.Observer.
func (m *Metrics) Observe(sessionID string, events []gh.Event) {
	if m == nil {
		return
	}
	for _, e := range events {
		m.event(e)
	}
}

// The kinds Observe reads; the payloads of the others are never decoded.
func (m *Metrics) event(e gh.Event) {
	switch e.Kind {
	case gh.KindRunStarted:
		var p gh.RunStarted
		if json.Unmarshal(e.Payload, &p) != nil {
			return
		}
		m.turnsStarted.Inc()
		if p.TookOver {
			m.takeovers.Inc()
		}
	case gh.KindRunFinished:
		var p gh.RunFinished
		if json.Unmarshal(e.Payload, &p) != nil {
			return
		}
		status := oneOf(p.Status, "other", "done", "awaiting_approval", "failed", "cancelled")
		m.turnsSettled.WithLabelValues(status).Inc()
		m.turnSeconds.WithLabelValues(status).Observe(float64(p.DurationMs) / 1000)
		switch p.StopReason {
		case StopEffectUnknown:
			m.effects.WithLabelValues("unknown").Inc()
		case StopBudgetExhausted:
			m.budget.WithLabelValues("exhausted").Inc()
		}
	case gh.KindGateOpened:
		var p gh.GateOpened
		if json.Unmarshal(e.Payload, &p) != nil || p.Kind == gh.GateKindIncident {
			return // an incident's card is counted by gatehouse_incidents_open
		}
		m.gatesOpened.WithLabelValues(oneOf(p.Kind, "other", gh.GateKindApproval, gh.GateKindClarify)).Inc()
		m.opened.put(p.GateID, e.CreatedAt)
	case gh.KindGateDecided:
		var p gh.GateDecided
		if json.Unmarshal(e.Payload, &p) != nil || p.Tool == gh.GateKindIncident {
			return
		}
		decision := oneOf(string(p.Decision), "other", string(gh.GateApproved), string(gh.GateDenied), string(gh.GateAnswered), string(gh.GateExpired))
		m.gatesDecided.WithLabelValues(decision, surfaceLabel(p.Surface)).Inc()
		if p.Decision == gh.GateExpired {
			m.gatesExpired.Inc()
		}
		m.timeDecision(p.GateID, decision, e.CreatedAt)
	case gh.KindReceipt:
		var p struct {
			State string `json:"state"`
		}
		if json.Unmarshal(e.Payload, &p) != nil {
			return
		}
		if p.State == "started" || p.State == "finished" {
			m.effects.WithLabelValues(p.State).Inc()
		}
	case gh.KindNotice:
		var p gh.Notice
		if json.Unmarshal(e.Payload, &p) != nil {
			return
		}
		switch p.Code {
		case NoticeModelFallback:
			m.fallbacks.Inc()
		case NoticeBudgetAlert:
			m.budget.WithLabelValues("alert").Inc()
		}
	}
}

// StopEffectUnknown is the stop reason of a run.finished whose turn
// stopped on an effect of unknown outcome (the supervisor's).
const StopEffectUnknown = "effect-outcome-unknown"

// The stop reason and notice codes the supervisor commits, read here.
const (
	StopBudgetExhausted = "budget-exhausted" // a turn stopped at the daily budget
	NoticeModelFallback = "model-fallback"   // a fallback to another model
	NoticeBudgetAlert   = "budget-alert"     // a person passed the alert share of their budget
)

// timeDecision observes the gate's time to decision: from the opening
// this process saw, else (another replica's gate, or one opened before a
// restart) from Config.GateOpenedAt, off the committing goroutine.
func (m *Metrics) timeDecision(gateID, decision string, at time.Time) {
	if opened, ok := m.opened.take(gateID); ok {
		m.gateSeconds.WithLabelValues(decision).Observe(max(at.Sub(opened).Seconds(), 0))
		return
	}
	if m.cfg.Gates == nil || gateID == "" {
		return
	}
	if m.stopCtx.Err() != nil {
		return // stopped: no goroutine Stop would not wait for
	}
	m.lookups.Go(func() {
		ctx, cancel := context.WithTimeout(m.stopCtx, m.cfg.ScrapeTimeout)
		defer cancel()
		g, err := m.cfg.Gates.GetGate(ctx, gateID)
		if err != nil || g.Created.IsZero() {
			return
		}
		m.gateSeconds.WithLabelValues(decision).Observe(max(at.Sub(g.Created).Seconds(), 0))
	})
}

// Ledger wraps the model registry's ledger hook (models.Config.Ledger):
// each call attempt is counted, then handed on to next (if any).
func (m *Metrics) Ledger(next func(context.Context, models.LedgerRow)) func(context.Context, models.LedgerRow) {
	if m == nil {
		return next
	}
	return func(ctx context.Context, row models.LedgerRow) {
		m.ModelCall(row)
		if next != nil {
			next(ctx, row)
		}
	}
}

// ModelCall counts one model call attempt.
func (m *Metrics) ModelCall(row models.LedgerRow) {
	if m == nil {
		return
	}
	provider, model := m.modelLabels(row.Provider, row.Model)
	outcome := "ok"
	if row.Err != "" {
		outcome = "error"
		m.modelErrors.WithLabelValues(provider, model).Inc()
	}
	m.modelCalls.WithLabelValues(provider, model, outcome).Inc()
	m.modelSeconds.WithLabelValues(provider, model).Observe(row.Duration.Seconds())
	m.modelTokens.WithLabelValues(provider, model, "input").Add(float64(row.InputTokens))
	m.modelTokens.WithLabelValues(provider, model, "output").Add(float64(row.OutputTokens))
	m.modelCost.WithLabelValues(provider, model).Add(row.CostUSD)
}

// modelLabels keeps the provider/model pairs under MaxModels: a selection
// comes from configuration or from an input, and an input must not grow
// the series without bound.
func (m *Metrics) modelLabels(provider, model string) (string, string) {
	provider, model = clip(provider), clip(model)
	key := [2]string{provider, model}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.models[key]; ok {
		return provider, model
	}
	if len(m.models) >= m.cfg.MaxModels {
		return provider, "other"
	}
	m.models[key] = struct{}{}
	return provider, model
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	if s == "" {
		return "none"
	}
	return s
}

// oneOf returns v when it is one of known, else other.
// surfaceLabel is the surface label of a decision: a chat platform the
// platform table knows (gh.SessionPrefixOf: every adapter linked into the
// binary registers its own), one of the surfaces that are no platform, or
// "other" — a new platform gets its series with no change here.
func surfaceLabel(surface string) string {
	if _, ok := gh.SessionPrefixOf(surface); ok {
		return surface
	}
	return oneOf(surface, "other", nonPlatformSurfaces...)
}

// nonPlatformSurfaces are where a decision comes from besides a chat
// platform: the web UI, the API, and the gateway itself (expiry, cancel).
var nonPlatformSurfaces = []string{"web", "api", "gateway"}

func oneOf(v, other string, known ...string) string {
	if slices.Contains(known, v) {
		return v
	}
	return other
}
