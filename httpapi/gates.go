package httpapi

import (
	"context"
	"net/http"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// GateDecider decides approval gates; gates.Service is one. The first
// decision on any surface wins; later ones get the decision already made.
type GateDecider interface {
	Decide(ctx context.Context, id string, d gh.Decision) (gh.Gate, bool, error)
}

type decisionRequest struct {
	// Decision is approve, deny, or answer (a clarifying question's option).
	Decision string `json:"decision"`
	// Reason is why, for a denial: the model reads it, and the cards on
	// chat platforms show it.
	Reason string `json:"reason,omitempty"`
	Answer string `json:"answer,omitempty"`
	// Scope "chat" approves for the gate's chat ("Approve for this
	// chat"): only on a gate that offers a grant (gate.opened grantBound).
	Scope string `json:"scope,omitempty"`
	// By is accepted for older clients and not recorded: the web UI and
	// the API decide as the operator, gh.LocalUser.
	By string `json:"by,omitempty"`
}

type decisionResponse struct {
	Decision gh.GateState `json:"decision"`
	By       string       `json:"by"`
	Surface  string       `json:"surface"`
	Reason   string       `json:"reason,omitempty"`
	Answer   string       `json:"answer,omitempty"`
	// Won is true for the press that made the decision; every later press
	// gets the decision made, with who made it and where.
	Won  bool    `json:"won"`
	Gate gh.Gate `json:"gate"`
}

var decisionStates = map[string]gh.GateState{"approve": gh.GateApproved, "deny": gh.GateDenied, "answer": gh.GateAnswered}

// decide is POST /v1/gates/{id}/decision.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Gates == nil {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "approval gates are not enabled on this gateway"))
		return
	}
	var req decisionRequest
	if err := s.body.Decode(w, r, &req, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	state, ok := decisionStates[strings.ToLower(strings.TrimSpace(req.Decision))]
	if !ok {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "decision must be approve, deny or answer, not %q", req.Decision))
		return
	}
	surface := "api"
	if r.Header.Get("X-Gatehouse-Source") == "web" {
		surface = "web"
	}
	id := r.PathValue("id")
	read, err := s.ownGate(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	answer := req.Answer
	if scope := strings.ToLower(strings.TrimSpace(req.Scope)); scope != "" {
		if err := s.grantScope(r.Context(), read, scope, state, answer); err != nil {
			writeError(w, r, s.log, err)
			return
		}
		answer = gh.ScopeChat
	}
	d := gh.Decision{State: state, By: gh.LocalUser, Surface: surface, Reason: strings.TrimSpace(req.Reason), Answer: answer}
	var g gh.Gate
	var won bool
	if rd, ok := s.cfg.Gates.(readDecider); ok {
		// The gate was just read to check whose it is: no second read.
		g, won, err = rd.DecideRead(r.Context(), read, d)
	} else {
		g, won, err = s.cfg.Gates.Decide(r.Context(), id, d)
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, decisionResponse{Decision: g.State, By: g.DecidedBy, Surface: g.Surface, Reason: g.Reason, Answer: g.Answer, Won: won, Gate: g})
}

// readDecider is a GateDecider that can decide from a gate its caller has
// just read (gates.Service.DecideRead).
type readDecider interface {
	DecideRead(ctx context.Context, g gh.Gate, d gh.Decision) (gh.Gate, bool, error)
}

// ownGate reads a gate, refusing one of another tenant's session as
// unknown.
func (s *Server) ownGate(ctx context.Context, id string) (gh.Gate, error) {
	g, err := s.cfg.Store.GetGate(ctx, id)
	if err != nil {
		return gh.Gate{}, err
	}
	err = s.ownSession(ctx, g.SessionID)
	if gh.IsCode(err, gh.CodeUnknownSession) {
		return gh.Gate{}, gh.Errorf(gh.CodeNotFound, "no gate %q", id)
	}
	return g, err
}

// getGate is GET /v1/gates/{id}.
func (s *Server) getGate(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	g, err := s.ownGate(r.Context(), id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := s.gateView(r.Context(), g)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"gate": v})
}

// gateView is a gate as the API shows it: its row, and the fields its
// card shows (each argument that decides the effect, as the tool worker
// committed them in gate.opened). A gate opened before cards had fields
// has none: show its arguments.
type gateView struct {
	gh.Gate
	Fields []gh.CardField `json:"fields,omitempty"`
}

func (s *Server) gateView(ctx context.Context, g gh.Gate) (gateView, error) {
	o, _, err := s.k.GateOpened(ctx, g)
	if err != nil {
		return gateView{}, err
	}
	return gateView{Gate: g, Fields: o.Fields}, nil
}

// listGates is GET /v1/gates?session=&state=&limit=.
func (s *Server) listGates(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r, 100, 1000)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	session := r.URL.Query().Get("session")
	state := gh.GateState(r.URL.Query().Get("state"))
	switch state {
	case "", gh.GatePending, gh.GateApproved, gh.GateDenied, gh.GateExpired, gh.GateAnswered:
	default:
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "state must be pending, approved, denied, expired or answered, not %q", state))
		return
	}
	if session != "" {
		if err := s.ownSession(r.Context(), session); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	gates, err := s.cfg.Store.ListGates(r.Context(), session, state, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// Without a session filter, keep only this tenant's gates.
	out := make([]gateView, 0, len(gates))
	for _, g := range gates {
		if session == "" {
			if err := s.ownSession(r.Context(), g.SessionID); err != nil {
				continue
			}
		}
		v, err := s.gateView(r.Context(), g)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"gates": out})
}
