package openaiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// logPage is how many events one read of the log fetches.
const logPage = 1000

// Idempotency key prefixes of what the endpoint commits, apart from other
// surfaces' keys.
const (
	inputKeyPrefix = "openai:turn:"
	retryKeyPrefix = "openai:retry:"
)

// completions is POST /v1/chat/completions: read the request, check its
// history against the session's log, commit its input (or its
// regenerate), wait for the outcome and answer it.
func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := h.readRequest(w, r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	selection, err := h.selection(req.model)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	id, err := sessionFor(r, req.user)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	// A chat's session is refused before its log is read: even a request
	// that would commit nothing (a history whose answer is in the log)
	// is not answered from it here (the kernel refuses its commits too).
	if err := gh.CheckEdgeSession(id); err != nil {
		h.writeError(w, r, err)
		return
	}
	// Subscribe before the first read: a commit between the read and the
	// wait then still signals.
	sub := h.k.SubscribeCommits(id)
	defer sub.Close()
	if err := h.ensureSession(ctx, id); err != nil {
		h.writeError(w, r, err)
		return
	}
	conv := newConversation()
	if err := h.read(ctx, id, conv); err != nil {
		h.writeError(w, r, err)
		return
	}
	pos, err := conv.match(req.history, req.last)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var after int64 // a regenerate waits for a state set after its turn.retry
	switch {
	case pos.turn < 0:
		pos.turn, err = h.commitInput(ctx, id, conv, pos.place, req.last, selection)
	case conv.turns[pos.turn].state == turnFailed:
		after, err = h.regenerate(ctx, id)
	case conv.turns[pos.turn].state == turnAnswered && h.isRegenerate(r, id, conv.turns[pos.turn]):
		after, err = h.regenerateAnswer(ctx, id, conv, pos.turn)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set(SessionHeader, id)
	out := h.emitter(w, r, req)
	h.wait(ctx, sub, id, conv, pos, after, out)
}

// ensureSession makes the session on first use, for the tenant; one of
// another tenant is unknown here.
func (h *Handler) ensureSession(ctx context.Context, id string) error {
	known, err := h.k.KnownSession(ctx, id, h.cfg.Tenant)
	if err != nil || known {
		return err
	}
	_, _, err = h.k.CreateSession(ctx, gh.Session{ID: id, Tenant: h.cfg.Tenant})
	return err
}

// read adds the log's events after the conversation's cursor.
func (h *Handler) read(ctx context.Context, id string, conv *conversation) error {
	for {
		evs, err := h.k.Events(ctx, id, conv.cursor, logPage)
		if err != nil {
			return err
		}
		conv.add(evs)
		if len(evs) < logPage {
			return nil
		}
	}
}

// commitInput commits the request's last message as the session's user
// message at place, keyed by that place: a repeat of the request commits
// nothing more, and another message racing for the place is a mismatch.
// It returns the message's turn.
func (h *Handler) commitInput(ctx context.Context, id string, conv *conversation, place int, text, selection string) (int, error) {
	payload, err := json.Marshal(gh.UserMessage{Text: text, Delivery: gh.DeliveryQueue, Selection: selection, Source: "api"})
	if err != nil {
		return 0, gh.Wrap(gh.CodeInternal, err, "encode user message")
	}
	c, err := h.k.EdgeCommit(ctx, kernel.EdgeInput{Tenant: h.cfg.Tenant, SessionID: id,
		Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload, Key: inputKeyPrefix + strconv.Itoa(place)}})
	if gh.IsCode(err, gh.CodeIdempotencyConflict) {
		return 0, mismatch("another message took this place in the conversation (user message %d) first. %s", place, howToStartOver)
	}
	if err != nil {
		return 0, err
	}
	if err := h.read(ctx, id, conv); err != nil {
		return 0, err
	}
	i, ok := conv.index[c.Event.Seq]
	if !ok {
		return 0, gh.Errorf(gh.CodeInternal, "user message %d of session %q is not in its log", c.Event.Seq, id)
	}
	return i, nil
}

// retryCountHeader is the header the OpenAI SDKs (openai-go, Python, Node)
// number their own retries of a request with: "0" on the first try.
const retryCountHeader = "X-Stainless-Retry-Count"

// isRegenerate reports whether the same request again, for the answered
// turn t, asks for a new answer rather than for the answer it has. The
// request cannot say which: a regenerate resends the history without the
// answer, exactly as the first request was. So: an SDK's own retry of a
// request (retryCountHeader above 0) is the request again, whose reply
// was lost; a client this process gave the answer to asks for another;
// otherwise it is a regenerate unless the client may never have had the
// answer — a gate opened in the turn (it was given the approval text) or
// the answer came near or after MaxWait (it was told to wait), and then
// the same again is how it is told to get the answer.
func (h *Handler) isRegenerate(r *http.Request, id string, t turn) bool {
	if n, err := strconv.Atoi(strings.TrimSpace(r.Header.Get(retryCountHeader))); err == nil && n > 0 {
		return false
	}
	if h.wasDelivered(id, t.answer) {
		return true
	}
	return !t.gated && t.answeredAt.Sub(t.asked) < h.cfg.MaxWait*9/10
}

// regenerateAnswer asks for a new answer to the turn at i, which has one
// that did not fail, through the retry path: a turn.retry that names the
// answer it replaces (the supervisor then owes the turn's inputs a fresh
// answer and does not show the model the old one). It is keyed by that
// answer, so the same regenerate twice commits one retry, while a
// regenerate of the new answer is a retry of its own. It returns the
// retry's seq.
func (h *Handler) regenerateAnswer(ctx context.Context, id string, conv *conversation, i int) (int64, error) {
	gen := conv.turns[i].answer
	payload, err := json.Marshal(gh.TurnRetry{RunID: conv.replies[gen].run, Replaces: gen, By: gh.LocalUser})
	if err != nil {
		return 0, gh.Wrap(gh.CodeInternal, err, "encode turn.retry")
	}
	c, err := h.k.EdgeCommit(ctx, kernel.EdgeInput{Tenant: h.cfg.Tenant, SessionID: id,
		Event: gh.NewEvent{Kind: gh.KindTurnRetry, Payload: payload, Key: retryKeyPrefix + gen}})
	if err != nil {
		return 0, err
	}
	if !c.Duplicate {
		h.log.Info("an answer was regenerated", "session", id, "replaces", gen)
	}
	return c.Event.Seq, nil
}

// regenerate asks for the session's failed last turn again, through the
// retry path (turn.retry, as POST /v1/sessions/{id}/retry commits it),
// keyed by the failed run so a repeat commits nothing more. It returns the
// retry's seq; when the last run did not fail there is nothing to run
// again and the turn's outcome is answered as it is (0).
func (h *Handler) regenerate(ctx context.Context, id string) (int64, error) {
	run, ok, err := h.k.LatestRun(ctx, id)
	if err != nil || !ok || run.State != gh.RunFailed {
		return 0, err
	}
	payload, err := json.Marshal(gh.TurnRetry{RunID: run.ID, By: gh.LocalUser})
	if err != nil {
		return 0, gh.Wrap(gh.CodeInternal, err, "encode turn.retry")
	}
	c, err := h.k.EdgeCommit(ctx, kernel.EdgeInput{Tenant: h.cfg.Tenant, SessionID: id,
		Event: gh.NewEvent{Kind: gh.KindTurnRetry, Payload: payload, Key: retryKeyPrefix + strconv.FormatInt(run.ID, 10)}})
	if err != nil {
		return 0, err
	}
	if !c.Duplicate {
		h.log.Info("a failed turn was regenerated", "session", id, "run", run.ID)
	}
	return c.Event.Seq, nil
}
