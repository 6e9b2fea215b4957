package incidents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/effectjournal"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// Notice codes of what an incident tells the chat.
const (
	NoticeClosed    = "incident_closed"
	NoticeDiagnosis = "incident_diagnosis"
)

// CommitDecisionTx implements gates.Kind: it commits gate.decided
// for g (decided in tx) from outside the run — no run is queued, nothing
// counts as input — and does what the decision calls for in the same
// transaction: Close ends the run, Diagnose opens the next card. It
// returns what it committed anew.
func (s *Service) CommitDecisionTx(ctx context.Context, tx store.Tx, g gh.Gate) ([]kernel.Committed, error) {
	events := []gh.NewEvent{gh.GateDecidedEvent(g)}
	cs, err := s.k.OutsideCommitTx(ctx, tx, g.SessionID, events...)
	if err != nil {
		return nil, err
	}
	if cs[0].Duplicate {
		return nil, nil // logged before: done then
	}
	if g.State != gh.GateAnswered {
		return cs, nil
	}
	c, err := cardOf(g)
	if err != nil {
		return nil, err
	}
	var more []kernel.Committed
	switch g.Answer {
	case gh.IncidentClose:
		more, err = s.closeTx(ctx, tx, g, c)
	case gh.IncidentDiagnose:
		var r gh.Run
		if r, err = tx.GetRun(ctx, c.RunID); err == nil && r.State == gh.RunRunning && r.Epoch == c.Epoch {
			next := c
			next.N++
			_, more, err = s.openTx(ctx, tx, r, next)
		}
	}
	return append(cs, more...), err
}

// Decided implements gates.Kind: a Diagnose decided by this
// process starts its diagnosis, which runs outside the transaction and
// the run.
func (s *Service) Decided(ctx context.Context, g gh.Gate) {
	if g.State != gh.GateAnswered || g.Answer != gh.IncidentDiagnose {
		return
	}
	s.diagnoses.Add(1)
	go func() {
		defer s.diagnoses.Done()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DiagnoseTimeout)
		defer cancel()
		if err := s.diagnose(dctx, g); err != nil {
			s.cfg.Logger.Warn("incidents: diagnosis not posted", "incident", g.ID, "err", err)
		}
	}()
}

// closeTx ends the run of card c in tx, as g decided: fenced, settled
// as cancelled, its open calls answered, the chat told.
func (s *Service) closeTx(ctx context.Context, tx store.Tx, g gh.Gate, c card) ([]kernel.Committed, error) {
	now := s.now()
	sess, err := tx.LockSession(ctx, g.SessionID)
	if err != nil {
		return nil, err
	}
	r, err := tx.LockRun(ctx, c.RunID)
	if err != nil {
		return nil, err
	}
	who := g.DecidedBy
	if who == gh.LocalUser {
		who = "the operator"
	}
	if g.Surface != "" && g.Surface != g.DecidedBy {
		who += " (" + g.Surface + ")"
	}
	if r.State != gh.RunRunning || r.Epoch != c.Epoch {
		return s.k.OutsideCommitTx(ctx, tx, g.SessionID, notice(NoticeClosed, "The stuck turn had already ended by the time "+who+" closed it; nothing else was stopped.", g.ID))
	}
	// The fence: a new session epoch the run takes, no owner, no lease.
	// The stuck worker's renewals and fenced commits fail from now on,
	// which cancels its attempt; whatever it still finishes is refused.
	if sess, err = tx.BumpEpoch(ctx, g.SessionID, now); err != nil {
		return nil, err
	}
	r.State, r.Epoch, r.Owner, r.LeaseExpiresAt = gh.RunCancelled, sess.Epoch, "", now
	r.CancelRequested, r.Reason, r.Updated = false, "closed by "+who+" after no progress", now
	if err := tx.UpdateRun(ctx, r); err != nil {
		return nil, err
	}
	tail, err := tailEvents(ctx, tx, g.SessionID)
	if err != nil {
		return nil, err
	}
	events, unknown := answerOpenCalls(tail, r.ID)
	text := "🛑 This turn was closed by " + who + " after it made no progress."
	if len(unknown) > 0 {
		text += fmt.Sprintf(" I can't tell whether %s ran: it was running when the turn was closed, and it will not be run again so it cannot happen twice. Please check before asking for it again.", strings.Join(unknown, ", "))
	}
	fin, _ := json.Marshal(gh.RunFinished{RunID: r.ID, Attempt: r.Attempts, Status: string(gh.RunCancelled), StopReason: "closed"})
	events = append(events, gh.NewEvent{Kind: gh.KindRunFinished, Payload: fin, Key: "incident-finished:" + g.ID}, notice(NoticeClosed, text, g.ID))
	cs, err := s.k.OutsideCommitTx(ctx, tx, g.SessionID, events...)
	if err != nil {
		return nil, err
	}
	// The session's lock goes on: to a run whose decision came while the
	// stuck one held it, else to input the closed turn never read.
	if _, _, err := s.k.SessionFreedTx(ctx, tx, g.SessionID, sess.LastInputSeq > r.ReadWatermark, now); err != nil {
		return nil, err
	}
	return cs, nil
}

func notice(code, text, gateID string) gh.NewEvent {
	p, _ := json.Marshal(gh.Notice{Code: code, Text: text})
	return gh.NewEvent{Kind: gh.KindNotice, Payload: p, Key: code + ":" + gateID}
}

// answerOpenCalls answers the calls of the closed run's newest assistant
// message in tail that have no result: "outcome unknown" with a finished
// receipt for one whose effect started (it is never run again), "not
// run" for the rest. Another run's calls — a turn waiting for its card
// while this one ran — are left to that run. It returns the events and
// the tools whose outcome is unknown.
func answerOpenCalls(tail []gh.Event, runID int64) ([]gh.NewEvent, []string) {
	var calls []gh.ToolCall
	results := map[string]bool{}
	receipts := map[string]effectjournal.Receipt{}
	for _, e := range tail {
		switch e.Kind {
		case gh.KindAssistantMessage:
			var a gh.AssistantMessage
			if json.Unmarshal(e.Payload, &a) == nil && len(a.ToolCalls) > 0 && (a.RunID == 0 || a.RunID == runID) {
				calls = a.ToolCalls
			}
		case gh.KindToolResult:
			var r gh.ToolResult
			if json.Unmarshal(e.Payload, &r) == nil {
				results[r.ToolCallID] = true
			}
		case gh.KindReceipt:
			var r effectjournal.Receipt
			if json.Unmarshal(e.Payload, &r) == nil && receipts[r.ToolCallID].State != effectjournal.Finished {
				receipts[r.ToolCallID] = r
			}
		}
	}
	var events []gh.NewEvent
	var unknown []string
	for _, c := range calls {
		if results[c.ID] {
			continue
		}
		res := gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "Not run: the turn was closed after it made no progress.", IsError: true}
		rc := receipts[c.ID]
		started := rc.State == effectjournal.Started
		if started {
			res.Content = "Outcome unknown: the turn was closed while this call ran; it was not run again."
			unknown = append(unknown, c.Name)
		}
		p, _ := json.Marshal(res)
		events = append(events, gh.NewEvent{Kind: gh.KindToolResult, Payload: p, Key: "tool:" + c.ID})
		if started {
			// Finished: whatever happened, nobody runs it again.
			rc.State = effectjournal.Finished
			rp, _ := json.Marshal(rc)
			events = append(events, gh.NewEvent{Kind: gh.KindReceipt, Payload: rp, Key: effectjournal.Key(c.ID, effectjournal.Finished)})
		}
	}
	return events, unknown
}
