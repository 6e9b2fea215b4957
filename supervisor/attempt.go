package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/answers"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/supervisor/transcript"
	"github.com/gatehouse/gatehouse/toolworker"
)

var (
	// errCancelRequested ends an attempt whose run someone cancelled.
	errCancelRequested = errors.New("cancel requested")
	// errLeaseLost ends an attempt that may no longer write.
	// Its code tells the tool worker that an effect in flight may stop
	// too: its result could not be recorded (toolworker).
	errLeaseLost = gh.Errorf(gh.CodeLeaseLost, "lease lost")
	// errTurnTimeout ends an attempt that ran past the turn's time limit.
	errTurnTimeout = errors.New("turn time limit reached")
)

// outcome is how an attempt ended, before it is settled.
type outcome struct {
	status  gh.Outcome
	reason  string
	noRetry bool
	summary gh.RunFinished
	// remember is the answered turn, each person's part, handed to memory
	// after the settle.
	remember []transcript.PersonTurn
	// execution is what the last model request resolved and ran with.
	execution *gh.Execution
	// t, inputs and promptSeq describe the turn in progress, so an end
	// forced from outside (the time limit) can still answer its inputs.
	t         *transcript.Transcript
	inputs    []int64
	promptSeq int64
	// unanswered: the turn left input it read for a turn of its own.
	unanswered bool
	// view is the attempt's view of the log; what it staged commits
	// with the settle.
	view *kernel.View
	// answer is the final answer staged in view, until the settle
	// commits it.
	answer *gh.AssistantMessage
	// prior is what the run's earlier attempts cost, when the log says
	// so exactly (priorKnown); otherwise the ledger is read.
	prior      gh.RunFinished
	priorKnown bool
}

// attempt runs one claimed run to its settle.
func (s *Supervisor) attempt(lease gh.Lease) {
	started := time.Now()
	ctx, cancel := context.WithCancelCause(s.attemptsCtx)
	defer cancel(nil)
	if s.cfg.TurnTimeout > 0 {
		timer := time.AfterFunc(s.cfg.TurnTimeout, func() { cancel(errTurnTimeout) })
		defer timer.Stop()
	}
	renewDone := make(chan struct{})
	step := &stepNow{}
	go s.renew(ctx, cancel, lease, step, renewDone)
	ctx = withStep(ctx, step)

	log := s.log.With("session", lease.SessionID, "run", lease.RunID, "lease", lease.Token())
	calls := &callInfo{sessionID: lease.SessionID, runID: lease.RunID}
	var out outcome
	var err error
	if lease.CancelRequested {
		// Taken over from a worker that died after the user pressed stop:
		// the cancel stands, nothing of the turn runs.
		cancel(errCancelRequested)
	} else {
		out, err = s.work(withCallInfo(ctx, calls), lease)
	}
	cancel(nil)
	<-renewDone
	cause := context.Cause(ctx)

	settleCtx, settleCancel := context.WithTimeout(context.WithoutCancel(s.attemptsCtx), 30*time.Second)
	defer settleCancel()
	unanswered := out.unanswered
	switch {
	case errors.Is(cause, errLeaseLost) || gh.IsCode(err, gh.CodeStaleEpoch) || gh.IsCode(err, gh.CodeLeaseLost):
		// Another worker owns the run now; nothing of ours may land.
		log.Warn("attempt abandoned: lease lost", "err", err)
		return
	case errors.Is(cause, errDraining):
		s.spoolAnswer(log, lease, out.answer, cause)
		if rerr := s.k.Release(settleCtx, lease); rerr != nil {
			log.Warn("could not release the run while draining; it will be taken over when the lease expires", "err", rerr)
		} else {
			log.Info("run released for another worker: draining")
		}
		return
	case errors.Is(cause, errTurnTimeout) && out.answer != nil && err == nil:
		// The limit struck after the turn had its answer: it settles
		// answered.
	case errors.Is(cause, errTurnTimeout):
		// (out.view travels on: what the turn staged settles with it.)
		msg := fmt.Sprintf("⏱ This turn ran longer than its time limit (%s) and was stopped. Ask again, perhaps in smaller steps.", s.cfg.TurnTimeout)
		if out.t != nil {
			if err := s.endTurn(settleCtx, lease, out.t, out.promptSeq, out.inputs, msg, "turn-timeout"); err != nil {
				log.Warn("could not say the turn timed out", "err", err)
			}
		}
		out = outcome{status: gh.OutcomeDone, reason: "time limit", summary: out.summary, execution: out.execution}
		out.summary.Status, out.summary.StopReason = "done", "turn-timeout"
	case errors.Is(cause, errCancelRequested):
		out = outcome{status: gh.OutcomeCancelled, reason: "cancelled", summary: out.summary, execution: out.execution}
		out.summary.Status = "cancelled"
	case err != nil:
		log.Error("attempt failed", "err", err)
		out = outcome{status: gh.OutcomeFailed, reason: err.Error(), summary: out.summary, execution: out.execution}
		out.summary.Status, out.summary.Error = "failed", err.Error()
	}
	out.summary.RunID, out.summary.Attempt = lease.RunID, lease.Attempt
	if out.view != nil {
		defer out.view.Close()
	}
	calls.mu.Lock()
	out.summary.CostUSD = calls.costUSD
	pending := append([]gh.LedgerRow(nil), calls.pending...)
	spent, spentTokens := calls.costUSD, calls.tokens
	calls.mu.Unlock()
	// The whole turn's cost: every ledger row of this run (earlier
	// attempts, the part before an approval) and this attempt's unwritten.
	// The log says what the earlier attempts cost when each of them
	// settled (run.finished carries the run's total so far); otherwise
	// the ledger is read.
	if out.priorKnown {
		out.summary.TurnCostUSD = out.prior.TurnCostUSD + spent
		out.summary.TurnTokens = gh.Usage{InputTokens: out.prior.TurnTokens.InputTokens + spentTokens.InputTokens,
			OutputTokens: out.prior.TurnTokens.OutputTokens + spentTokens.OutputTokens}
	} else if used, cost, lerr := s.k.RunCost(settleCtx, lease.RunID); lerr == nil {
		out.summary.TurnCostUSD, out.summary.TurnTokens = cost, used
		for _, r := range pending {
			out.summary.TurnCostUSD += r.CostUSD
			out.summary.TurnTokens.InputTokens += r.InputTokens
			out.summary.TurnTokens.OutputTokens += r.OutputTokens
		}
	}
	out.summary.DurationMs = time.Since(started).Milliseconds()
	payload, _ := json.Marshal(out.summary)
	settle := kernel.Settle{
		Outcome: out.status, Reason: out.reason, NoRetry: out.noRetry, Calls: calls.take(), Unanswered: unanswered, Execution: out.execution,
		View:   out.view,
		Events: []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: payload, Key: fmt.Sprintf("run%d-epoch%d-finished", lease.RunID, lease.Epoch)}},
	}
	// The answered turn is remembered in the settle's transaction (each
	// person's words under their own key; a retried attempt that answers
	// again remembers the same turn, keyed by person, session and seq,
	// once): no commit of its own.
	remembered := false
	if s.cfg.Memory != nil && len(out.remember) > 0 {
		settle.OnDone = func(ctx context.Context, tx store.Tx) error {
			for _, p := range out.remember {
				if _, err := s.cfg.Memory.RememberTx(ctx, tx, p.UserKey, p.Turn); err != nil {
					return err
				}
			}
			remembered = true
			return nil
		}
	}
	settled, err := s.k.Finish(settleCtx, lease, settle)
	if err != nil && settle.OnDone != nil && !gh.IsCode(err, gh.CodeStaleEpoch) && !gh.IsCode(err, gh.CodeLeaseLost) {
		// A memory failure never costs the user the answer: settle
		// without it, then try memory on its own.
		log.Warn("settle with memory failed; settling without it", "err", err)
		settle.OnDone, remembered = nil, false
		settled, err = s.k.Finish(settleCtx, lease, settle)
	}
	if err != nil && out.answer != nil && gh.IsCode(err, gh.CodeUnavailable) {
		// The database refused the answer with the settle: keep it in
		// the spool for the next attempt rather than lose it, and settle
		// without it as a failed attempt, retried after the backoff.
		s.spoolAnswer(log, lease, out.answer, err)
		out.summary.Status, out.summary.Error = "failed", "the answer could not be saved: "+err.Error()
		payload, _ := json.Marshal(out.summary)
		settle.Outcome, settle.Reason, settle.View, settle.OnDone = gh.OutcomeFailed, out.summary.Error, nil, nil
		settle.Events = []gh.NewEvent{{Kind: gh.KindRunFinished, Payload: payload, Key: settle.Events[0].Key}}
		settled, err = s.k.Finish(settleCtx, lease, settle)
		remembered = true // nothing to remember: the turn is not answered yet
	}
	if err != nil {
		log.Warn("settle failed; the run will be taken over when the lease expires", "err", err)
		return
	}
	log.Info("attempt settled", "state", settled.State, "requeued", settled.Requeued, "turns", out.summary.ModelRequests, "took", time.Since(started).Round(time.Millisecond))
	if s.cfg.Memory != nil && settled.State == gh.RunDone && !remembered {
		for _, p := range out.remember {
			if _, err := s.cfg.Memory.Remember(settleCtx, p.UserKey, p.Turn); err != nil {
				log.Warn("turn not remembered", "user", p.UserKey, "err", err)
			}
		}
	}
}

// renew extends the lease every third of its TTL. The moment renewal proves
// the claim gone, the attempt is cancelled so it cannot keep working; a
// cancel request does the same with its own cause.
func (s *Supervisor) renew(ctx context.Context, cancel context.CancelCauseFunc, lease gh.Lease, step *stepNow, done chan<- struct{}) {
	defer close(done)
	every := s.k.Config().LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l, err := s.k.RenewStep(ctx, lease, step.get())
		switch {
		case gh.IsCode(err, gh.CodeStaleEpoch) || gh.IsCode(err, gh.CodeLeaseLost):
			cancel(errLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			// A transient failure: keep trying until the lease would
			// have expired, then stop writing.
			if time.Now().After(lease.ExpiresAt) {
				cancel(errLeaseLost)
				return
			}
			s.log.Warn("lease renewal failed; retrying", "run", lease.RunID, "err", err)
		case l.CancelRequested:
			cancel(errCancelRequested)
			return
		default:
			lease = l
		}
	}
}

// attemptPlan is what pre-flight settles before anything is committed. The
// model loop carries it on: guide input joins inputs and moves cursor.
type attemptPlan struct {
	// t is the log from the latest compaction, cut at the watermark: input
	// that arrived after the claim waits for the settle to re-queue it.
	t       *transcript.Transcript
	pending []int64
	missing []gh.ToolCall
	// owed: a turn whose tool results are all in but whose model never
	// answered them (a failure or a crash after the batch) is still owed.
	owed bool
	// chain is resolved before anything is committed, so a bad selection
	// fails the turn before any of it lands; selectErr says why.
	chain     models.Chain
	selectErr error
	// chat is the chat's stored choices (Config.ChatSettings), the
	// fallback of the inputs' own.
	chat      store.ChatSettings
	inputs    []int64
	promptSeq int64
	// cursor starts at the watermark: only input read past it may join
	// the turn, and reading it is recorded first.
	cursor int64
	// held is input read but left for a turn of its own: the turn goes
	// on from an earlier request (a decision came, or a batch is
	// finished) that never presented it.
	held []int64
	// view is the attempt's view of the log (kernel.LoadView).
	view *kernel.View
	// prior is the run's cost before this attempt, when priorKnown.
	prior      gh.RunFinished
	priorKnown bool
	// knowledge is the library's note for the turn (knowledge.go), and
	// given its passages, which the final answer may cite.
	knowledge []models.Message
	given     []gh.Source
}

// work is the attempt's work: pre-flight, the batch a predecessor left,
// then the model loop.
func (s *Supervisor) work(ctx context.Context, lease gh.Lease) (out outcome, err error) {
	out = outcome{status: gh.OutcomeDone, summary: gh.RunFinished{Status: "done"}}
	p, err := s.preflight(ctx, lease)
	if p != nil {
		out.unanswered = len(p.held) > 0
		out.view, out.prior, out.priorKnown = p.view, p.prior, p.priorKnown
		ctx = kernel.WithView(ctx, p.view)
	}
	switch {
	case err != nil:
		return out, err
	case !p.owed:
		out.summary.StopReason = "nothing-owed"
		return out, nil
	case p.selectErr != nil:
		return s.fail(ctx, lease, p.t, p.pending, p.selectErr, out)
	}
	defer func() { out.t, out.inputs, out.promptSeq = p.t, p.inputs, p.promptSeq }()
	// Before any batch: a chat's passage taints the batch a resume runs.
	p.knowledge, p.given = s.recallKnowledge(ctx, lease.SessionID, p.t, p.inputs)
	// A predecessor died mid-batch, or the batch waited for a decision
	// that has come.
	if len(p.missing) > 0 {
		if done, err := s.runTools(ctx, lease, p.t, p.t.NewestAssistant(), p.missing, p.inputs, p.promptSeq, &out); done || err != nil {
			return out, err
		}
	}
	err = s.modelLoop(ctx, lease, p, &out)
	return out, err
}

// preflight loads the session's log and decides what the turn owes. It
// reads and never writes.
func (s *Supervisor) preflight(ctx context.Context, lease gh.Lease) (*attemptPlan, error) {
	view, events, err := s.k.LoadView(ctx, lease)
	if err != nil {
		return nil, err
	}
	prior, priorKnown := priorCost(lease, events)
	for len(events) > 0 && events[len(events)-1].Seq > lease.ReadWatermark {
		events = events[:len(events)-1]
	}
	t := transcript.Decode(events, s.log)
	// The run's own turn is the work; another run's, waiting for its
	// card, is conversation (transcript.ForRun).
	t.ForRun(lease.RunID)
	p := &attemptPlan{t: t, pending: t.Unanswered(), missing: t.MissingResults(), cursor: lease.ReadWatermark,
		view: view, prior: prior, priorKnown: priorKnown}
	continuing := t.AwaitsAnswer()
	a := t.NewestAssistant()
	goesOn := (len(p.missing) > 0 || continuing) && a != nil
	if goesOn && len(p.pending) > 0 {
		// The turn that asked for these calls goes on and answers what
		// it was asked. Input it never presented (typed while a card
		// waited, or while the batch ran) is not merged into it: the
		// model does not see it now, and it is answered in a turn of
		// its own once this one settles (kernel.Settle.Unanswered).
		p.held = p.pending
		t.Hold(p.held)
		p.pending = nil
	}
	p.owed = len(p.pending) > 0 || len(p.missing) > 0 || continuing
	if !p.owed {
		return p, nil
	}
	if p.chat, err = s.chatSettings(ctx, lease.SessionID); err != nil {
		view.Close()
		return nil, err
	}
	p.chain, p.selectErr = s.selection(t, p.pending, p.chat.Selection)
	if p.selectErr != nil {
		return p, nil
	}
	p.inputs = p.pending
	if goesOn {
		p.promptSeq, p.inputs = transcript.PromptOf(a.GenerationID), append([]int64(nil), a.InputSeqs...)
	} else if len(p.pending) > 0 {
		p.promptSeq = p.pending[len(p.pending)-1]
	}
	return p, nil
}

// modelLoop asks the model and runs the tools it calls until the turn is
// answered or has to stop.
func (s *Supervisor) modelLoop(ctx context.Context, lease gh.Lease, p *attemptPlan, out *outcome) error {
	// Unread input is presented last (transcript.Messages does it).
	notes, recalled := s.turnNotes(ctx, p.t, p.inputs)
	notes = withKnowledge(notes, p.knowledge)
	userKey := p.t.LatestInput(p.inputs).UserKey()
	if ci := callInfoFrom(ctx); ci != nil {
		ci.userKey = userKey
	}
	loc, err := s.zoneOf(ctx, p.t.FirstInput(p.inputs))
	if err != nil {
		return err
	}
	for n := 0; ; n++ {
		if n >= s.cfg.MaxModelRequests {
			if err := s.notice(ctx, lease, fmt.Sprintf("u%d-maxturns", p.promptSeq), "max-turns",
				fmt.Sprintf("Stopped after %d model requests in one turn.", s.cfg.MaxModelRequests)); err != nil {
				return err
			}
			out.summary.StopReason = "max_turns"
			// No request follows: a guide still waiting becomes queued
			// input, answered by a run of its own, and the log says so.
			return s.downgradeGuides(ctx, lease, p)
		}
		msgs, stop, err := s.prepareRequest(ctx, lease, p, userKey, loc, notes, out)
		if stop || err != nil {
			return err
		}
		gen, err := s.generation(ctx, lease.SessionID, p.t, p.promptSeq)
		if err != nil {
			return err
		}
		a, spooled, err := s.recoverSpooled(ctx, lease, p, gen, out)
		if err != nil {
			return err
		}
		if spooled {
			if len(a.ToolCalls) == 0 {
				return nil
			}
		} else {
			var failed, final bool
			if a, failed, err = s.ask(ctx, lease, p, gen, msgs, recalled, out); failed || err != nil {
				return err
			}
			if final, err = s.settleAnswer(ctx, lease, p, a, out); err != nil {
				return err
			}
			if final {
				// A guide sent while the final request was in flight is
				// for this turn: the same run answers it with one more
				// request, rather than a run of its own later — unless
				// no request may follow.
				if n+1 >= s.cfg.MaxModelRequests {
					return s.downgradeGuides(ctx, lease, p)
				}
				if more, err := s.guidesArrived(ctx, lease, p); err != nil || !more {
					return err
				}
				continue
			}
		}
		if done, err := s.runTools(ctx, lease, p.t, &a, a.ToolCalls, p.inputs, p.promptSeq, out); done || err != nil {
			return err
		}
	}
}

// prepareRequest gets the turn ready for its next model request and builds
// the request's messages. It reports stop when the turn has ended instead.
func (s *Supervisor) prepareRequest(ctx context.Context, lease gh.Lease, p *attemptPlan, userKey string, loc *time.Location, notes []models.Message, out *outcome) ([]models.Message, bool, error) {
	// Guide input joins the turn at its boundary.
	cursor, guides, err := s.injectGuides(ctx, lease, p.t, p.cursor)
	p.cursor = cursor
	if err != nil {
		return nil, true, err
	}
	p.inputs = append(p.inputs, guides...)
	if stop, err := s.overBudget(ctx, lease, userKey); err != nil || stop != "" {
		if err != nil {
			return nil, true, err
		}
		if err := s.endTurn(ctx, lease, p.t, p.promptSeq, p.inputs, stop, "budget-exhausted"); err != nil {
			return nil, true, err
		}
		out.summary.StopReason = "budget-exhausted"
		return nil, true, nil
	}
	if err := s.maybeCompact(ctx, lease, p.t, p.chain, &out.summary); err != nil {
		return nil, true, err
	}
	// This turn's notes only: they are built for the turn and never
	// stored, so an earlier turn's notes cannot pile up.
	msgs := append([]models.Message{{Role: models.RoleSystem, Text: s.basePrompt(loc) + "\n\n" + toolworker.FenceInstruction}}, notes...)
	return append(msgs, p.t.Messages()...), false, nil
}

// recoverSpooled saves the answer a previous attempt got but could not
// save, rather than ask the model again; it reports whether there was one.
func (s *Supervisor) recoverSpooled(ctx context.Context, lease gh.Lease, p *attemptPlan, gen string, out *outcome) (gh.AssistantMessage, bool, error) {
	a, ok := s.spool.Load(lease.SessionID, gen)
	if !ok {
		return a, false, nil
	}
	seq, err := s.commit(ctx, lease, gh.KindAssistantMessage, gen, a)
	if err != nil {
		return a, true, err
	}
	s.spool.Drop(lease.SessionID, gen)
	p.t.AddAssistant(seq, a)
	out.summary.ModelRequests++
	out.summary.StopReason = a.StopReason
	return a, true, nil
}

// ask makes one model request and turns the reply into the assistant
// message to save. It reports failed when the failure became the
// attempt's outcome.
func (s *Supervisor) ask(ctx context.Context, lease gh.Lease, p *attemptPlan, gen string, msgs []models.Message, recalled []gh.RecalledMemory, out *outcome) (gh.AssistantMessage, bool, error) {
	specs := s.cfg.Tools.Specs()
	markStep(ctx, "model")
	resp, notices, err := s.cfg.Models.Call(ctx, p.chain, models.Request{Messages: msgs, Tools: specs, Thinking: p.thinking()}, func(delta string) {
		s.k.PublishPartial(kernel.Partial{SessionID: lease.SessionID, GenerationID: gen, Text: delta})
	})
	if ctx.Err() != nil {
		return gh.AssistantMessage{}, true, context.Cause(ctx)
	}
	for i, n := range notices {
		if err := s.notice(ctx, lease, fmt.Sprintf("%s-notice%d", gen, i+1), "model-fallback", n.Text); err != nil {
			return gh.AssistantMessage{}, true, err
		}
	}
	if err != nil {
		*out, err = s.fail(ctx, lease, p.t, p.inputs, err, *out)
		return gh.AssistantMessage{}, true, err
	}
	out.summary.ModelRequests++
	out.summary.Tokens.InputTokens += resp.Usage.InputTokens
	out.summary.Tokens.OutputTokens += resp.Usage.OutputTokens
	out.summary.Provider, out.summary.Model = resp.Provider, resp.Model
	chain := p.chain
	if len(chain) == 0 {
		chain = s.cfg.Models.Selection() // the configured one
	}
	out.execution = executionOf(resp, chain, len(specs))
	out.summary.Thinking, out.summary.Note = resp.Applied.Thinking, resp.Applied.Note
	out.summary.Context = gh.ContextSize{Messages: len(msgs), Tokens: max(resp.Usage.InputTokens, transcript.EstimateTokens(msgs))}
	a := gh.AssistantMessage{
		GenerationID: gen, RunID: lease.RunID, Text: resp.Text, InputSeqs: dedupe(p.inputs), StopReason: resp.StopReason,
		Usage: resp.Usage, Provider: resp.Provider, Model: resp.Model,
		Memories: recalled, Thinking: resp.Thinking,
	}
	for i, c := range resp.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, gh.ToolCall{ID: callID(gen, i, c.ID), Name: c.Name, Arguments: c.Arguments})
	}
	return a, false, nil
}

// settleAnswer saves the model's answer and, when it is the final one,
// hands the turn to memory; it reports final so the loop stops there.
func (s *Supervisor) settleAnswer(ctx context.Context, lease gh.Lease, p *attemptPlan, a gh.AssistantMessage, out *outcome) (bool, error) {
	if len(a.ToolCalls) > 0 {
		a.StopReason = gh.StopToolUse
	} else {
		// The final answer gets the safeguards of what was asked (one
		// paragraph, JSON copied byte for byte); the same on a retry.
		a.Text = answers.Apply(p.t.InputText(p.inputs), a.Text)
		if a.StopReason == gh.StopEndTurn {
			a.Sources = cited(p.given, a.Text)
		}
	}
	if v := kernel.ViewOf(ctx, lease); v != nil {
		// An answer that asks for tools commits with what its tools
		// commit first (a result, a started receipt, a gate with the
		// settle that waits for it): it is only worth keeping with them.
		// The final answer commits with the settle, which follows at
		// once: one commit for both. Its ledger rows stay pending for
		// the same commit or the settle.
		raw, err := json.Marshal(a)
		if err != nil {
			return true, gh.Wrap(gh.CodeInternal, err, "encode %s", gh.KindAssistantMessage)
		}
		v.Stage(gh.NewEvent{Kind: gh.KindAssistantMessage, Payload: raw, Key: a.GenerationID}, nil, nil)
		p.t.AddAssistant(0, a)
		out.summary.StopReason = a.StopReason
		if len(a.ToolCalls) > 0 {
			return false, nil
		}
		// Held until the settle commits: spooled if it cannot.
		out.answer = &a
		out.remember = p.t.TurnForMemory(a, s.cfg.Now())
		for i := range out.remember {
			out.remember[i].Turn.SessionID = lease.SessionID
		}
		return true, nil
	}
	seq, err := s.commit(ctx, lease, gh.KindAssistantMessage, a.GenerationID, a)
	if err != nil {
		if gh.IsCode(err, gh.CodeUnavailable) && ctx.Err() == nil {
			s.spoolAnswer(s.log.With("session", lease.SessionID), lease, &a, err)
		}
		return true, err
	}
	p.t.AddAssistant(seq, a)
	out.summary.StopReason = a.StopReason
	if len(a.ToolCalls) > 0 {
		return false, nil
	}
	out.remember = p.t.TurnForMemory(a, s.cfg.Now())
	for i := range out.remember {
		out.remember[i].Turn.SessionID = lease.SessionID
	}
	return true, nil
}

// spoolAnswer keeps an answer the database did not take (why) for the
// run's next attempt, rather than ask the model again.
func (s *Supervisor) spoolAnswer(log *slog.Logger, lease gh.Lease, a *gh.AssistantMessage, why error) {
	if a == nil {
		return
	}
	if err := s.spool.Save(lease.SessionID, *a); err != nil {
		log.Error("answer lost: the database did not take it and the spool failed", "err", why, "spool_err", err)
		return
	}
	log.Warn("answer spooled: the database did not take it", "generation", a.GenerationID, "err", why)
}

// endTurn answers the turn's inputs with a message of the gateway's own
// instead of the model's (a limit reached, an effect's outcome unknown): it
// consumes the inputs, so the turn is over and not retried.
func (s *Supervisor) endTurn(ctx context.Context, lease gh.Lease, t *transcript.Transcript, promptSeq int64, inputs []int64, text, code string) error {
	gen, err := s.generation(ctx, lease.SessionID, t, promptSeq)
	if err != nil {
		return err
	}
	a := gh.AssistantMessage{GenerationID: gen, RunID: lease.RunID, Text: text, InputSeqs: dedupe(inputs), StopReason: gh.StopEndTurn, ErrorCode: code}
	seq, err := s.commit(ctx, lease, gh.KindAssistantMessage, gen, a)
	if err != nil {
		return err
	}
	t.AddAssistant(seq, a)
	return nil
}

// overBudget checks the user's spending today against the daily cap before
// a model call. At the alert share it commits a notice for the admin (once
// a day per session); at the cap it returns the message that ends the turn.
func (s *Supervisor) overBudget(ctx context.Context, lease gh.Lease, userKey string) (string, error) {
	limit := s.cfg.DailyBudgetUSD
	if limit <= 0 {
		return "", nil
	}
	now := s.cfg.Now().In(s.cfg.Location)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, s.cfg.Location)
	rows, err := s.k.Usage(ctx, "user", day, userKey)
	if err != nil {
		return "", err
	}
	spent := callInfoFrom(ctx).pendingCost()
	for _, r := range rows {
		spent += r.CostUSD
	}
	if spent >= limit {
		return fmt.Sprintf("💸 Today's spending cap for model calls ($%.2f) is reached ($%.2f spent), so I can't answer until tomorrow. An admin can raise GATEHOUSE_DAILY_BUDGET_USD.", limit, spent), nil
	}
	if spent >= limit*s.cfg.BudgetAlertShare {
		err := s.notice(ctx, lease, "budget-alert:"+userKey+":"+day.Format("2006-01-02"), "budget-alert",
			fmt.Sprintf("Spending alert: %s has used $%.2f of today's $%.2f cap.", userKey, spent, limit))
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// turnNotes are the system notes of this turn: the environment (the tools
// at hand), what memory holds that bears on the question (only facts whose
// evidence clears the floor), and a pin on the latest message.
func (s *Supervisor) turnNotes(ctx context.Context, t *transcript.Transcript, inputs []int64) ([]models.Message, []gh.RecalledMemory) {
	latest := t.LatestInput(inputs)
	var notes []models.Message
	var names []string
	for _, spec := range s.cfg.Tools.Specs() {
		names = append(names, spec.Name)
	}
	env := "Environment: no tools are available in this turn."
	if len(names) > 0 {
		env = "Environment: tools available in this turn: " + strings.Join(names, ", ") + "."
	}
	notes = append(notes, models.Message{Role: models.RoleSystem, Text: env})
	var recalled []gh.RecalledMemory
	if latest != nil && s.cfg.Memory != nil {
		found, err := s.cfg.Memory.Recall(ctx, latest.UserKey(), latest.Text, 0)
		if err != nil {
			s.log.Warn("memory recall failed; answering without it", "err", err)
		}
		if len(found) > 0 {
			var b strings.Builder
			b.WriteString("What you remember about this person that bears on the question (use it only if it helps):")
			for _, f := range found {
				b.WriteString("\n- " + f.Fact.Text)
				recalled = append(recalled, gh.RecalledMemory{ID: f.Fact.ID, Text: f.Fact.Text})
			}
			notes = append(notes, models.Message{Role: models.RoleSystem, Text: b.String()})
		}
	}
	if n := pendingNote(t.PendingCards(), s.cfg.Now().In(s.cfg.Location)); n != nil {
		notes = append(notes, *n)
	}
	if latest != nil {
		notes = append(notes, models.Message{Role: models.RoleSystem, Text: "The latest message to answer: " + latest.Text})
	}
	return notes, recalled
}

// selection resolves the model chain from the newest pending input's own
// selection, else the chat's (chatSel, already checked against the
// list), else the configured one. Only the newest input counts: an older
// input with a bad selection must not fail every later turn.
func (s *Supervisor) selection(t *transcript.Transcript, pending []int64, chatSel string) (models.Chain, error) {
	if len(pending) == 0 {
		// A turn that goes on (after an approval, or a batch a crash
		// cut) keeps the model its inputs chose: the inputs its last
		// answer presented.
		pending = t.GoingOn()
	}
	if len(pending) > 0 {
		if sel := t.Selection(pending[len(pending)-1]); sel != "" {
			return models.ParseSelection(sel)
		}
	}
	if chatSel != "" {
		return models.ParseSelection(chatSel)
	}
	return nil, nil // nil chain: the registry's configured selection
}

// runTools hands one batch, calls of the assistant message a, to the tool
// worker, made for the person whose message led to them (transcript.AskerOf).
// It reports done when the turn cannot go on now: a call waits for a person
// (the attempt settles awaiting approval, holding nothing), or an effect's
// outcome is unknown (the user is told, and the model is not asked again).
func (s *Supervisor) runTools(ctx context.Context, lease gh.Lease, t *transcript.Transcript, a *gh.AssistantMessage, calls []gh.ToolCall, inputs []int64, promptSeq int64, out *outcome) (bool, error) {
	markStep(ctx, toolStep(calls))
	res, err := s.cfg.Tools.RunBatch(ctx, lease, t.AskerOf(a), calls)
	if err != nil {
		if ctx.Err() != nil {
			return true, context.Cause(ctx)
		}
		return true, err
	}
	for _, r := range res.Results {
		t.AddResult(r.Seq, r.Result)
	}
	out.summary.ToolTimings = append(out.summary.ToolTimings, res.Timings...)
	switch {
	case res.Stop != "":
		if err := s.endTurn(ctx, lease, t, promptSeq, inputs, res.Stop, "effect-outcome-unknown"); err != nil {
			return true, err
		}
		out.summary.StopReason = "effect-outcome-unknown"
		return true, nil
	case res.Paused:
		out.status, out.reason = gh.OutcomeAwaitingApproval, "waiting for a decision on an approval gate"
		out.summary.Status, out.summary.StopReason = "awaiting_approval", "awaiting_approval"
		return true, nil
	}
	return false, nil
}

// injectGuides reads input committed after cursor; guide input joins the
// running turn (recorded as read first), queue input waits for the settle
// to re-queue the session.
func (s *Supervisor) injectGuides(ctx context.Context, lease gh.Lease, t *transcript.Transcript, cursor int64) (int64, []int64, error) {
	v := kernel.ViewOf(ctx, lease)
	if v != nil && v.Quiet() {
		// Nothing but this attempt's own commits since it last looked.
		return cursor, nil, nil
	}
	const page = 100
	evs, err := s.k.LeasedEvents(ctx, lease, cursor, page)
	if err != nil {
		return cursor, nil, err
	}
	if v != nil && len(evs) < page {
		v.Seen(max(cursor, lastSeq(evs)))
	}
	if len(evs) == 0 {
		return cursor, nil, nil
	}
	var guides []int64
	var read int64
	for _, e := range evs {
		if e.Kind != gh.KindUserMessage {
			continue
		}
		var u gh.UserMessage
		if json.Unmarshal(e.Payload, &u) != nil || u.Delivery != gh.DeliveryGuide {
			// Queue input waits: stop here so it stays above the watermark.
			break
		}
		t.AddUser(e.Seq, u)
		guides = append(guides, e.Seq)
		read = e.Seq
	}
	if read == 0 {
		return cursor, nil, nil
	}
	if err := s.k.RecordRead(ctx, lease, read); err != nil {
		return cursor, nil, err
	}
	return read, guides, nil
}

// guidesArrived takes in the guides committed while the turn's final
// request was in flight, as the next request would: it reports whether
// there were any, so the turn goes on to answer them.
func (s *Supervisor) guidesArrived(ctx context.Context, lease gh.Lease, p *attemptPlan) (bool, error) {
	cursor, guides, err := s.injectGuides(ctx, lease, p.t, p.cursor)
	if err != nil || len(guides) == 0 {
		return false, err
	}
	p.cursor = cursor
	p.inputs = append(p.inputs, guides...)
	return true, nil
}

// NoticeGuideQueued is the code of the notice that says a guide will be
// answered as queued input: it came when no further model request of its
// turn would read it.
const NoticeGuideQueued = "guide-queued"

// downgradeGuides notes, for each guide waiting unread when the turn ends
// without another request, that it is answered next as queued input (the
// run's settle queues it): the log never shows a guide answered apart
// without saying why.
func (s *Supervisor) downgradeGuides(ctx context.Context, lease gh.Lease, p *attemptPlan) error {
	evs, err := s.k.Events(ctx, lease.SessionID, p.cursor, 100)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if e.Kind != gh.KindUserMessage {
			continue
		}
		var u gh.UserMessage
		if json.Unmarshal(e.Payload, &u) != nil || u.Delivery != gh.DeliveryGuide {
			break
		}
		if err := s.notice(ctx, lease, fmt.Sprintf("guidequeued:%d", e.Seq), NoticeGuideQueued,
			fmt.Sprintf("The guide at #%d came as the turn ended; it is answered next, as a new message.", e.Seq)); err != nil {
			return err
		}
	}
	return nil
}

// fail turns a model failure into the attempt's outcome. A failure that a
// retry may cure is settled as failed and retried; on the last attempt, or
// when retrying cannot help, the user gets a ⚠️ message with a hint —
// never an answer made up over the gap.
func (s *Supervisor) fail(ctx context.Context, lease gh.Lease, t *transcript.Transcript, inputs []int64, err error, out outcome) (outcome, error) {
	code := models.ErrorCode(err)
	retryable := code == models.CodeTimeout || code == models.CodeRateLimited || code == models.CodeServerError ||
		code == models.CodeUnreachable || code == models.CodeBadResponse
	last := !retryable || lease.Attempt >= s.k.Config().MaxAttempts
	out.status, out.reason, out.noRetry = gh.OutcomeFailed, err.Error(), !retryable
	out.summary.Status, out.summary.Error, out.summary.StopReason = "failed", err.Error(), gh.StopError
	if !last {
		return out, nil
	}
	promptSeq := int64(0)
	if len(inputs) > 0 {
		promptSeq = inputs[len(inputs)-1]
	}
	msg := strings.TrimSpace(err.Error())
	hint := hintFor(code, err)
	gen, gerr := s.generation(ctx, lease.SessionID, t, promptSeq)
	if gerr != nil {
		return out, gerr
	}
	a := gh.AssistantMessage{
		GenerationID: gen, RunID: lease.RunID, InputSeqs: dedupe(inputs), StopReason: gh.StopError,
		Text: "⚠️ The turn failed: " + msg + "\n" + hint, Error: msg, ErrorCode: code, Hint: hint,
	}
	if code == models.CodeNotConfigured {
		// The one message already says what to do: said twice (as the
		// error and as the hint) it is noise on every surface.
		a.Text = "⚠️ No answer: " + strings.TrimPrefix(hint, "Configure a model: ")
	}
	if _, cerr := s.commit(ctx, lease, gh.KindAssistantMessage, a.GenerationID, a); cerr != nil {
		return out, cerr
	}
	return out, nil
}

func hintFor(code string, err error) string {
	switch code {
	case models.CodeNotConfigured:
		var me *models.Error
		if errors.As(err, &me) && me.Message != "" {
			return "Configure a model: " + me.Message
		}
		return "Configure a model with GATEHOUSE_MODEL."
	case models.CodeUnknownProvider:
		return "Check GATEHOUSE_MODEL (or the selection sent with the message): the provider is not known."
	case models.CodeUnauthorized:
		return "The model provider refused the key: check OPENAI_API_KEY or ANTHROPIC_API_KEY."
	case models.CodeNotFound:
		return "The model was not found: check the model name in GATEHOUSE_MODEL."
	case models.CodeTimeout:
		return "The model did not answer in time. Send the message again, or check the model server."
	case models.CodeRateLimited:
		return "The model provider is limiting requests. Wait a minute and send the message again."
	case models.CodeUnreachable:
		return "The model server could not be reached: check OPENAI_BASE_URL or ANTHROPIC_BASE_URL and the network."
	case models.CodeBadResponse, models.CodeServerError:
		return "The model server failed. Send the message again later; if it keeps failing, check the model server's logs."
	default:
		return "Send the message again; if it keeps failing, check the gateway's log."
	}
}

// commit writes one event under the lease and returns its seq.
func (s *Supervisor) commit(ctx context.Context, lease gh.Lease, kind gh.Kind, key string, payload any) (int64, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return 0, gh.Wrap(gh.CodeInternal, err, "encode %s", kind)
	}
	ci := callInfoFrom(ctx)
	calls := ci.take()
	c, err := s.k.CommitWithCalls(ctx, lease, calls, gh.NewEvent{Kind: kind, Payload: raw, Key: key})
	if err != nil {
		if ci != nil {
			// Not written: keep them for the settle.
			ci.mu.Lock()
			ci.pending = append(calls, ci.pending...)
			ci.mu.Unlock()
		}
		return 0, err
	}
	return c[0].Event.Seq, nil
}

func (s *Supervisor) notice(ctx context.Context, lease gh.Lease, key, code, text string) error {
	_, err := s.commit(ctx, lease, gh.KindNotice, key, gh.Notice{Code: code, Text: text})
	return err
}

// basePrompt is the first message of every request: who the assistant is
// and today's date and time in loc, the zone of the person answered.
func (s *Supervisor) basePrompt(loc *time.Location) string {
	now := s.cfg.Now().In(loc)
	return fmt.Sprintf("%s\n\nToday is %s; the time is %s (%s).", s.cfg.BasePrompt,
		now.Format("Monday, 2 January 2006"), now.Format("15:04"), loc.String())
}

// zoneOf is the time zone of the turn's dates: that of the person whose
// message it answers (in a turn answering several, the first of them),
// read from the store now, else the gateway's. A stored name this build's
// zone data does not know is logged and the gateway's used.
func (s *Supervisor) zoneOf(ctx context.Context, m *gh.UserMessage) (*time.Location, error) {
	key := m.UserKey()
	if s.cfg.Zones == nil || key == gh.LocalUser {
		return s.cfg.Location, nil
	}
	z, ok, err := s.cfg.Zones.GetPersonZone(ctx, key)
	if err != nil || !ok {
		return s.cfg.Location, err
	}
	loc, err := time.LoadLocation(z.Zone)
	if err != nil {
		s.log.Warn("a person's time zone is not known to this build; dating their turn in the gateway's", "user", key, "zone", z.Zone, "err", err)
		return s.cfg.Location, nil
	}
	return loc, nil
}

// generation names the next answer of a prompt. The count of answers in
// the loaded log gives the ordinal; answers a compaction summarised away (or
// an unreadable row) are not counted, so then the store is asked whether
// the name is taken before it is used.
func (s *Supervisor) generation(ctx context.Context, sessionID string, t *transcript.Transcript, promptSeq int64) (string, error) {
	gen := t.Generation(promptSeq)
	if !t.Compacted() && t.Skipped() == 0 {
		// The whole log is loaded and read: the count is exact, and the
		// store need not be asked.
		return gen, nil
	}
	for {
		_, taken, err := s.k.EventByKey(ctx, sessionID, gen)
		if err != nil || !taken {
			return gen, err
		}
		n, _ := strconv.Atoi(gen[strings.LastIndex(gen, "a")+1:])
		gen = fmt.Sprintf("u%d-a%d", promptSeq, n+1)
	}
}

// callID makes a model's tool call id unique in the session: providers
// only promise uniqueness within one message (and some servers send none),
// while results, gates and receipts are keyed by it for the session's
// life. The generation prefix is derived from the log, so a retry derives
// the same id; the characters suit every provider.
func callID(gen string, i int, id string) string {
	var b strings.Builder
	for _, r := range id {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	clean := b.String()
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return fmt.Sprintf("%s_%d_%s", gen, i, clean)
}

func dedupe(seqs []int64) []int64 {
	out := make([]int64, 0, len(seqs))
	seen := map[int64]bool{}
	for _, s := range seqs {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func contains(s []int64, v int64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func lastSeq(evs []gh.Event) int64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// priorCost is what the run cost before this attempt, from the log the
// attempt loaded: each settled attempt's run.finished carries the run's
// total so far. It is exact only when the whole log is loaded and every
// earlier attempt of the run settled (an attempt that died or was handed
// back wrote ledger rows no run.finished counts); otherwise known is
// false and the ledger is read.
func priorCost(l gh.Lease, events []gh.Event) (prior gh.RunFinished, known bool) {
	if l.CompactionSeq != 0 || l.TookOver {
		return prior, false
	}
	// In log order, each earlier run.started of the run is followed by its
	// run.finished before the next one starts.
	settling := false
	for _, e := range events {
		switch e.Kind {
		case gh.KindRunStarted:
			var rs gh.RunStarted
			if json.Unmarshal(e.Payload, &rs) == nil && rs.RunID == l.RunID && e.Key != kernel.RunStartedKey(l.Epoch) {
				if settling {
					return gh.RunFinished{}, false
				}
				settling = true
			}
		case gh.KindRunFinished:
			var rf gh.RunFinished
			if json.Unmarshal(e.Payload, &rf) == nil && rf.RunID == l.RunID {
				prior, settling = rf, false
			}
		}
	}
	if settling {
		return gh.RunFinished{}, false
	}
	return prior, true
}
