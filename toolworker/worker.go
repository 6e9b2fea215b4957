package toolworker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/effectjournal"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/tools"
)

// Config configures the tool worker.
type Config struct {
	// Kernel commits results, gates and receipts. Required.
	Kernel *kernel.Kernel
	// Tools are the tools the model may call. Defaults to none.
	Tools *tools.Registry
	// Policies are the commitment checks by tool name. Defaults to
	// email_send resolving names against Contacts.
	Policies map[string]Policy
	// Contacts is the address book the email policy resolves names
	// against, per person (the call's user key). Defaults to none.
	Contacts Contacts
	// ApprovalTimeout is how long a gate waits for a decision before it
	// expires. Defaults to 5m.
	ApprovalTimeout time.Duration
	// CardLimit is how many characters of an approval card the smallest
	// chat platform configured has for the fields that must be shown whole
	// (its longest message less cards.Frame). A call whose card needs more
	// (cards.Need) is refused with a result the model reads, and no gate
	// is opened. Defaults to 0: no limit (no chat platform).
	CardLimit int
	// Workspace returns the session's current workspace directory.
	// Defaults to "" (workspace tools then refuse).
	Workspace func(sessionID string) string
	// Gates opens the worker's gates (a call's approval, a policy's
	// question) and decides them; it is the one home of the gate. Required
	// as soon as a call needs a card: without it such a call fails
	// (CodeInternal) and nothing runs.
	Gates *gates.Service
	// EffectTimeout bounds an approved effect once it started; it runs to
	// the end even through a drain. Defaults to 2m.
	EffectTimeout time.Duration
	// GrantTTL is how long an "Approve for this chat" lasts from the
	// decision (GATEHOUSE_GRANT_TTL). Defaults to 1h.
	GrantTTL time.Duration
	// ApprovalsNeeded is how many distinct people must approve a call of
	// tool (GATEHOUSE_APPROVERS_NEEDED): a card that needs more than one
	// does not offer "Approve for this chat", which one person's press
	// would otherwise turn into a standing approval. Defaults to 1.
	ApprovalsNeeded func(tool string) int
	// Secrets are the values of the gateway's own secrets (tokens, keys,
	// passwords): every tool result, and every message made from one, is
	// committed with them replaced by [redacted]. Defaults to none.
	Secrets []string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Worker runs tool batches.
type Worker struct {
	cfg     Config
	k       *kernel.Kernel
	journal *effectjournal.Journal
	secrets Redactor
}

// New returns a worker.
func New(cfg Config) *Worker {
	if cfg.Tools == nil {
		cfg.Tools = tools.NewRegistry()
	}
	if cfg.Policies == nil {
		cfg.Policies = map[string]Policy{tools.NameEmailSend: EmailPolicy{Contacts: cfg.Contacts}}
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = 5 * time.Minute
	}
	if cfg.EffectTimeout <= 0 {
		cfg.EffectTimeout = 2 * time.Minute
	}
	if cfg.GrantTTL <= 0 {
		cfg.GrantTTL = time.Hour
	}
	if cfg.Workspace == nil {
		cfg.Workspace = func(string) string { return "" }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg, k: cfg.Kernel, journal: effectjournal.New(cfg.Kernel), secrets: NewRedactor(cfg.Secrets...)}
}

// Specs lists the tools for a model request.
func (w *Worker) Specs() []gh.ToolSpec { return w.cfg.Tools.Specs() }

// Tools is the registry the worker runs from, for the tool list an
// operator reads (GET /v1/tools).
func (w *Worker) Tools() *tools.Registry { return w.cfg.Tools }

// Committed is a tool result committed under the lease.
type Committed struct {
	Seq    int64
	Result gh.ToolResult
}

// BatchResult is what a batch came to.
type BatchResult struct {
	Results []Committed
	Timings []gh.ToolTiming
	// Paused: a call waits for a person. The attempt settles awaiting
	// approval; a decision re-queues the run.
	Paused bool
	// Stop ends the turn with this message for the user, without asking
	// the model again (an effect whose outcome is unknown).
	Stop string
}

// Asker is who a batch's calls are made for, as the supervisor derives it
// from the log (so a resumed batch gets the same): the person whose message
// led to the calls, and whether the turn has read outside text.
type Asker struct {
	// User is the person's user key (gh.UserMessage.UserKey; gh.LocalUser
	// for web and API input). Memory tools and the contact lookup read and
	// write this person's memory only. Empty: nobody is known, and the
	// memory tools refuse.
	User string
	// Platform is the surface of the person's message (telegram, discord,
	// slack, web, api).
	Platform string
	// Tainted: the turn has read outside text (a result marked External,
	// a document sent with the message) since the person's message that
	// led to the calls. A call of a tool that writes memory (tools.MemoryWriter) then
	// opens a gate as a Danger tool's does, and a call a grant would
	// cover gets a card instead (grant.go). Once a call of the batch
	// commits an External result, the calls after it are tainted too.
	Tainted bool
	// Requesters are the user keys of everyone whose message the turn
	// answers (in a group turn, several people): a gate the batch opens
	// records them, and each may decide it. Empty: User alone.
	Requesters []string
}

// requesters are who may decide a gate opened for the asker's calls.
func (a Asker) requesters() []string {
	if len(a.Requesters) > 0 {
		return a.Requesters
	}
	if a.User != "" {
		return []string{a.User}
	}
	return nil
}

// RunBatch handles the calls of one assistant message that have no result
// yet, made for who, each committed under the lease and keyed by its call
// id.
func (w *Worker) RunBatch(ctx context.Context, l gh.Lease, who Asker, calls []gh.ToolCall) (BatchResult, error) {
	var out BatchResult
	for _, c := range calls {
		start := time.Now()
		st, err := w.handle(ctx, l, who, c)
		if err != nil {
			return out, err
		}
		out.Paused = out.Paused || st.paused
		if st.stop != "" {
			out.Stop = st.stop
		}
		if st.committed != nil {
			who.Tainted = who.Tainted || st.committed.Result.External
			out.Results = append(out.Results, *st.committed)
			out.Timings = append(out.Timings, gh.ToolTiming{Tool: c.Name, DurationMs: time.Since(start).Milliseconds()})
		}
	}
	return out, nil
}

// step is what handling one call came to.
type step struct {
	// committed is the call's result, when one was committed.
	committed *Committed
	// paused: the call waits for a person.
	paused bool
	// stop ends the turn with this message for the user.
	stop string
}

// handle decides and, when it can, runs one call.
func (w *Worker) handle(ctx context.Context, l gh.Lease, who Asker, c gh.ToolCall) (step, error) {
	log := w.cfg.Logger.With("session", l.SessionID, "tool", c.Name, "call", c.ID)
	// A gate already opened for this call: act on its decision.
	n, opened, decided, err := w.latestGate(ctx, l, c.ID)
	if err != nil {
		return step{}, err
	}
	args := c.Arguments
	workspace := w.cfg.Workspace(l.SessionID)
	if opened != nil {
		if decided == nil {
			return step{paused: true}, nil
		}
		workspace = opened.Workspace
		switch decided.Decision {
		case gh.GateDenied:
			msg := fmt.Sprintf("The user denied this call (%s, via %s); it did not run.", decided.By, decided.Surface)
			if decided.Reason != "" {
				msg += " Reason: " + decided.Reason
			}
			return w.result(ctx, l, c, msg, true)
		case gh.GateExpired:
			return w.result(ctx, l, c, fmt.Sprintf("The approval request expired after %s without a decision; the call did not run. It can be asked for again.", w.cfg.ApprovalTimeout), true)
		case gh.GateAnswered:
			p := w.cfg.Policies[c.Name]
			if p == nil {
				return w.result(ctx, l, c, "a clarification was answered but the tool has no policy to apply it", true)
			}
			if args, err = p.Answer(opened.Arguments, decided.Answer); err != nil {
				return w.result(ctx, l, c, err.Error(), true)
			}
			return w.decideTier(ctx, l, who, c, args, workspace, n+1)
		case gh.GateApproved:
			// The approval holds for the arguments it was given for: the
			// call is checked again, and it must come to the same ones.
			base, err := w.answeredArgs(ctx, l, c, n)
			if err != nil {
				return w.result(ctx, l, c, err.Error(), true)
			}
			current, verdict := w.commitmentOn(ctx, w.toolCall(l, who, c, base, workspace))
			if verdict.Kind == Refuse || verdict.Kind == Clarify || argsHash(current) != opened.ArgsHash || argsHash(opened.Arguments) != opened.ArgsHash {
				log.Warn("approved call no longer matches what was approved; not running it")
				return w.result(ctx, l, c, "The arguments of this call no longer match what was approved, so it did not run. Ask again for a fresh approval.", true)
			}
			if decided.Answer == gh.ScopeChat && opened.GrantBound != "" {
				// "Approve for this chat": the grant is recorded before
				// the call runs.
				if err := w.recordGrant(ctx, l, opened, decided); err != nil {
					return step{}, err
				}
			}
			return w.runDanger(ctx, l, who, c, opened.Arguments, opened.ArgsHash, workspace, "")
		}
		return w.result(ctx, l, c, "unknown gate decision "+string(decided.Decision), true)
	}
	// 1. Can it run at all?
	if err := w.cfg.Tools.CheckCall(c); err != nil {
		return w.result(ctx, l, c, err.Error(), true)
	}
	// 2. Commitment check.
	args, verdict := w.commitmentOn(ctx, w.toolCall(l, who, c, c.Arguments, workspace))
	switch verdict.Kind {
	case Refuse:
		return w.result(ctx, l, c, "Refused: "+verdict.Reason, true)
	case Clarify:
		return step{paused: true}, w.openGate(ctx, l, c, n+1, gh.GateKindClarify, args, workspace, verdict, nil, who.requesters())
	}
	if verdict.Kind == Rewrite {
		if err := w.cfg.Tools.CheckCall(gh.ToolCall{ID: c.ID, Name: c.Name, Arguments: args}); err != nil {
			return w.result(ctx, l, c, err.Error(), true)
		}
	}
	// 3. Tier.
	return w.decideTier(ctx, l, who, c, args, workspace, n+1)
}

// toolCall is a call as a tool runs it and a policy checks it: the model's
// call with these arguments, the session, and who asks.
func (w *Worker) toolCall(l gh.Lease, who Asker, c gh.ToolCall, args json.RawMessage, workspace string) tools.Call {
	return tools.Call{ToolCall: gh.ToolCall{ID: c.ID, Name: c.Name, Arguments: args}, Workspace: workspace,
		SessionID: l.SessionID, Platform: who.Platform, User: who.User}
}

// commitmentOn runs the tool's policy on call; without one the call is
// allowed.
func (w *Worker) commitmentOn(ctx context.Context, call tools.Call) (json.RawMessage, Verdict) {
	p := w.cfg.Policies[call.Name]
	if p == nil {
		return call.Arguments, Verdict{Kind: Allow}
	}
	v := p.Check(ctx, call)
	if v.Kind == Rewrite {
		return v.Arguments, v
	}
	return call.Arguments, v
}

// writesMemory reports whether t writes what is kept about the asker.
func writesMemory(t tools.Tool) bool {
	mw, ok := t.(tools.MemoryWriter)
	return ok && mw.WritesMemory()
}

// answeredArgs returns the arguments the n-th gate of a call was opened
// from: the call's own, or — when a clarifying question came first — the
// call's with the user's answer applied.
func (w *Worker) answeredArgs(ctx context.Context, l gh.Lease, c gh.ToolCall, n int) (json.RawMessage, error) {
	args := c.Arguments
	for i := 1; i < n; i++ {
		ev, ok, err := w.k.LeasedEventByKey(ctx, l, gateKey(c.ID, i))
		if err != nil || !ok {
			return nil, fmt.Errorf("gate %d of this call is missing from the log: %v", i, err)
		}
		var opened gh.GateOpened
		if err := json.Unmarshal(ev.Payload, &opened); err != nil {
			return nil, err
		}
		dev, ok, err := w.k.SessionEventByKey(ctx, l, "gate:"+opened.GateID)
		if err != nil || !ok {
			return nil, fmt.Errorf("the decision on gate %d of this call is missing from the log: %v", i, err)
		}
		var d gh.GateDecided
		if err := json.Unmarshal(dev.Payload, &d); err != nil {
			return nil, err
		}
		if d.Decision == gh.GateAnswered {
			p := w.cfg.Policies[c.Name]
			if p == nil {
				return nil, fmt.Errorf("no policy to apply the answer to %s", c.Name)
			}
			if args, err = p.Answer(opened.Arguments, d.Answer); err != nil {
				return nil, err
			}
		}
	}
	return args, nil
}

func (w *Worker) decideTier(ctx context.Context, l gh.Lease, who Asker, c gh.ToolCall, args json.RawMessage, workspace string, n int) (step, error) {
	t, ok := w.cfg.Tools.Get(c.Name)
	if !ok {
		return w.result(ctx, l, c, "unknown tool "+c.Name, true)
	}
	// A safe tool runs at once, unless it writes memory in a turn that has
	// read outside text: then a person approves it first.
	if t.Tier() == tools.Safe && !(who.Tainted && writesMemory(t)) {
		// The call is in the log before it runs: a slow tool shows what
		// it is doing, and a drain mid-run hands on the call, not a
		// question to ask again.
		if err := w.k.Flush(ctx, l); err != nil {
			return step{}, err
		}
		// The duration is the tool's own run, as an approved call's is: the
		// flush before it and the commit after it are the log's time.
		start := time.Now()
		res, err := t.Run(ctx, w.toolCall(l, who, c, args, workspace))
		took := time.Since(start)
		if err != nil && ctx.Err() != nil {
			return step{}, context.Cause(ctx)
		}
		return w.commitResult(ctx, l, gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: w.content(res, err),
			IsError: res.IsError || err != nil, External: res.External, DurationMs: took.Milliseconds()})
	}
	// The card shows what will run, or there is no card.
	fields, refusal := w.cardFields(t, args)
	if refusal != "" {
		return w.result(ctx, l, c, refusal, true)
	}
	// A grant of this chat for the same bound runs it without a card,
	// through the effect journal as any approved call, but only in a
	// clean turn: after outside text the call may be what that text
	// asked for, so it gets a card that says why.
	if g, ok, err := w.coveringGrant(ctx, l.SessionID, t, args); err != nil {
		return step{}, err
	} else if ok && !who.Tainted {
		return w.runGranted(ctx, l, who, c, args, workspace, g)
	} else if ok {
		fields = append([]gh.CardField{taintedGrantField()}, fields...)
	}
	return step{paused: true}, w.openGate(ctx, l, c, n, gh.GateKindApproval, args, workspace, Verdict{}, fields, who.requesters())
}

// runDanger runs an approved call through the effect journal.
// note, when set, is added to the result after the tool's own words (a
// call run under a grant says so).
func (w *Worker) runDanger(ctx context.Context, l gh.Lease, who Asker, c gh.ToolCall, args json.RawMessage, hash, workspace, note string) (step, error) {
	t, ok := w.cfg.Tools.Get(c.Name)
	if !ok {
		return w.result(ctx, l, c, "unknown tool "+c.Name, true)
	}
	state, err := w.journal.Lookup(ctx, l, c.ID)
	if err != nil {
		return step{}, err
	}
	receipt := effectjournal.Receipt{ID: effectjournal.ReceiptID(l.SessionID, c.ID), ToolCallID: c.ID, Tool: c.Name, ArgsHash: hash, State: effectjournal.Started}
	switch state {
	case effectjournal.Finished:
		return step{}, nil // its result committed with the receipt
	case effectjournal.Started:
		if !t.Idempotent() {
			msg := fmt.Sprintf("⚠️ I can't tell whether %s ran: the gateway stopped while it was running, and it was not run again so it cannot happen twice. Please check (for an email: the recipient's inbox or your sent mail) before asking me to do it again.", c.Name)
			r := gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: "Outcome unknown: the gateway stopped while this call ran; it was not run again.", IsError: true}
			cm, err := w.finish(ctx, l, receipt, r)
			if err != nil {
				return step{}, err
			}
			return step{committed: cm, stop: msg}, nil
		}
		// An idempotent tool gets the same key again: safe to retry.
	default:
		if receipt, err = w.journal.Begin(ctx, l, c, hash); err != nil {
			return step{}, err
		}
	}
	start := time.Now()
	// Once started, an effect is let finish even if the worker is told to
	// stop (a drain, a cancel): cut short, its outcome would be unknown.
	// A lost lease still keeps a stale worker from committing the result.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.EffectTimeout)
	defer cancel()
	// Except for a worker fenced out — its lease lost to a takeover or to
	// an incident's Close: its result could not be recorded, and whoever
	// holds the run now reports the outcome unknown. The effect is
	// stopped rather than left running unseen.
	defer context.AfterFunc(ctx, func() {
		if gh.IsCode(context.Cause(ctx), gh.CodeLeaseLost) {
			cancel()
		}
	})()
	call := w.toolCall(l, who, c, args, workspace)
	call.IdempotencyKey = receipt.ID
	res, runErr := t.Run(runCtx, call)
	if runErr != nil && !errors.Is(runErr, tools.ErrOutcomeUnknown) {
		// The context ended mid-run: nothing more is written. A successor
		// finds the started receipt and says the outcome is unknown.
		return step{}, runErr
	}
	r := gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: w.content(res, runErr), IsError: res.IsError || runErr != nil,
		External: res.External, DurationMs: time.Since(start).Milliseconds()}
	if note != "" && !r.IsError {
		r.Content += "\n" + note
	}
	// The result commits even if the attempt was told to stop meanwhile:
	// the effect happened, and the lease still fences a stale worker.
	cm, err := w.finish(runCtx, l, receipt, r)
	if err != nil {
		return step{}, err
	}
	if runErr != nil {
		// The stop message becomes the assistant's own words in the
		// transcript, unfenced: an error that may quote the other side
		// (its result is External) stays in the fenced result, out of it.
		why := runErr.Error()
		if res.External {
			why = "the call failed in a way that leaves its outcome unknown"
		}
		return step{committed: cm, stop: w.secrets.Redact(fmt.Sprintf("⚠️ I can't tell whether %s worked: %s. It was not retried, so it cannot happen twice; please check before asking again.", c.Name, why))}, nil
	}
	return step{committed: cm}, nil
}

func (w *Worker) finish(ctx context.Context, l gh.Lease, receipt effectjournal.Receipt, r gh.ToolResult) (*Committed, error) {
	r.Content = w.committable(r.Content)
	raw, _ := json.Marshal(r)
	cs, err := w.journal.Finish(ctx, l, receipt, gh.NewEvent{Kind: gh.KindToolResult, Payload: raw, Key: "tool:" + r.ToolCallID})
	if err != nil {
		return nil, err
	}
	return &Committed{Seq: cs[0].Event.Seq, Result: r}, nil
}

// content is the text committed for a result: the gateway's secrets
// redacted, cut to what the log takes, and fenced when it came from
// outside. External results are fenced whether or not they are errors: a
// server's error text is as much its own words as a page.
func (w *Worker) content(res tools.Result, err error) string {
	text := res.Content
	if err != nil && text == "" {
		text = err.Error()
	}
	text = w.committable(text)
	if res.External {
		// Cut before fencing, so the closing marker is never cut off.
		return fence(fitPayload(text, w.contentBudget()-len(fence(""))))
	}
	return fitPayload(text, w.contentBudget())
}

// result commits a tool result of the worker's own words keyed by the
// call id.
func (w *Worker) result(ctx context.Context, l gh.Lease, c gh.ToolCall, text string, isErr bool) (step, error) {
	return w.commitResult(ctx, l, gh.ToolResult{ToolCallID: c.ID, Name: c.Name, Content: text, IsError: isErr})
}

// commitResult commits r keyed by its call id.
func (w *Worker) commitResult(ctx context.Context, l gh.Lease, r gh.ToolResult) (step, error) {
	r.Content = w.committable(r.Content)
	raw, _ := json.Marshal(r)
	cs, err := w.k.Commit(ctx, l, gh.NewEvent{Kind: gh.KindToolResult, Payload: raw, Key: "tool:" + r.ToolCallID})
	if err != nil {
		return step{}, err
	}
	return step{committed: &Committed{Seq: cs[0].Event.Seq, Result: r}}, nil
}

// GateID names the n-th gate of a call; the same call always gets the same
// ids, so a retried attempt opens the gate it opened before, not another.
func GateID(sessionID, toolCallID string, n int) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + toolCallID + "\x00" + strconv.Itoa(n)))
	return "g_" + hex.EncodeToString(h[:10])
}

func gateKey(toolCallID string, n int) string { return gh.GateOpenedKey(toolCallID, n) }

// latestGate finds the newest gate opened for a call and its decision. An
// attempt's view of the log answers without a read what it holds (a gate
// opened before the attempt's claim, and the decision that resumed it).
func (w *Worker) latestGate(ctx context.Context, l gh.Lease, callID string) (int, *gh.GateOpened, *gh.GateDecided, error) {
	n := 0
	var opened *gh.GateOpened
	for {
		ev, ok, err := w.k.LeasedEventByKey(ctx, l, gateKey(callID, n+1))
		if err != nil {
			return 0, nil, nil, err
		}
		if !ok {
			break
		}
		var g gh.GateOpened
		if err := json.Unmarshal(ev.Payload, &g); err != nil {
			return 0, nil, nil, gh.Wrap(gh.CodeInternal, err, "unreadable gate.opened at seq %d", ev.Seq)
		}
		opened, n = &g, n+1
	}
	if opened == nil {
		return 0, nil, nil, nil
	}
	// A decision commits from outside the run: one the view lacks is read.
	ev, ok, err := w.k.SessionEventByKey(ctx, l, "gate:"+opened.GateID)
	if err != nil || !ok {
		return n, opened, nil, err
	}
	var d gh.GateDecided
	if err := json.Unmarshal(ev.Payload, &d); err != nil {
		return 0, nil, nil, gh.Wrap(gh.CodeInternal, err, "unreadable gate.decided at seq %d", ev.Seq)
	}
	return n, opened, &d, nil
}

// openGate opens the call's n-th gate through the gates service: the row,
// and gate.opened with the fields its card shows and the people who may
// decide it (requesters), in the attempt's fenced commit.
func (w *Worker) openGate(ctx context.Context, l gh.Lease, c gh.ToolCall, n int, kind string, args json.RawMessage, workspace string, v Verdict, fields []gh.CardField, requesters []string) error {
	now := w.cfg.Now().UTC()
	g := gh.Gate{
		ID: GateID(l.SessionID, c.ID, n), SessionID: l.SessionID, RunID: l.RunID, ToolCallID: c.ID, Tool: c.Name,
		Arguments: args, ArgsHash: argsHash(args), Kind: kind, Question: v.Question, Options: v.Options,
		State: gh.GatePending, ExpiresAt: now.Add(w.cfg.ApprovalTimeout), Created: now,
	}
	// The row's fields go to the card from g (gh.GateOpenedEvent).
	opened := gh.GateOpened{Workspace: workspace, Fields: fields, Requesters: requesters}
	if kind == gh.GateKindApproval {
		opened.GrantBound, opened.GrantLabel = w.grantOffer(c.Name, args)
	}
	if w.cfg.Gates == nil {
		return gh.Errorf(gh.CodeInternal, "%s needs a card and the tool worker has no gates service", c.Name)
	}
	return w.cfg.Gates.OpenInRun(ctx, l, gates.Opening{Gate: g, Card: opened, Key: gateKey(c.ID, n)})
}

// argsHash is the hash an approval is bound to: of the arguments' JSON
// meaning, so key order or spacing cannot change it.
func argsHash(args json.RawMessage) string {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		h := sha256.Sum256(bytes.TrimSpace(args))
		return hex.EncodeToString(h[:])
	}
	canon, _ := json.Marshal(v) // map keys are sorted
	h := sha256.Sum256(canon)
	return hex.EncodeToString(h[:])
}
