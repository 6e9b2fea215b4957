package incidents

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Incident is one card of a stuck run, as GET /v1/incidents lists it.
type Incident struct {
	// ID is the card's gate id (decided through /v1/gates/{id}/decision).
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	RunID     int64  `json:"runId"`
	// State is open, closed (Close), diagnosed (Diagnose), or resolved
	// (the run moved on, or nobody pressed in time).
	State       string    `json:"state"`
	Text        string    `json:"text"`
	Step        string    `json:"step"`
	StepStarted time.Time `json:"stepStartedAt"`
	OpenedAt    time.Time `json:"openedAt"`
	DecidedBy   string    `json:"decidedBy,omitempty"`
	Surface     string    `json:"surface,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	DecidedAt   time.Time `json:"decidedAt,omitzero"`
}

// Incident states.
const (
	StateOpen      = "open"
	StateClosed    = "closed"
	StateDiagnosed = "diagnosed"
	StateResolved  = "resolved"
)

// List returns the incidents in st, newest first, at most limit; only
// open ones when open is set. It needs no Service: the admin API lists
// incidents whether or not this replica sweeps.
func List(ctx context.Context, st store.IncidentsReader, open bool, limit int) ([]Incident, error) {
	state := gh.GateState("")
	if open {
		state = gh.GatePending
	}
	gates, err := st.GatesOfKind(ctx, gh.GateKindIncident, state, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Incident, 0, len(gates))
	for _, g := range gates {
		c, _ := cardOf(g)
		in := Incident{ID: g.ID, SessionID: g.SessionID, RunID: g.RunID, Text: g.Question, Step: c.Step, StepStarted: c.StepStarted,
			OpenedAt: g.Created, DecidedBy: g.DecidedBy, Surface: g.Surface, Reason: g.Reason, DecidedAt: g.DecidedAt}
		switch {
		case g.State == gh.GatePending:
			in.State = StateOpen
		case g.State == gh.GateAnswered && g.Answer == gh.IncidentClose:
			in.State = StateClosed
		case g.State == gh.GateAnswered:
			in.State = StateDiagnosed
		default:
			in.State = StateResolved
		}
		out = append(out, in)
	}
	return out, nil
}

// OpenCount counts the open incidents in st (the gatehouse_incidents_open
// gauge), up to 1000.
func OpenCount(ctx context.Context, st store.IncidentsReader) (int, error) {
	gates, err := st.GatesOfKind(ctx, gh.GateKindIncident, gh.GatePending, 1000)
	return len(gates), err
}
