package openaiapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

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
	if pos.turn < 0 {
		pos.turn, err = h.commitInput(ctx, id, conv, pos.place, req.last, selection)
	} else if conv.turns[pos.turn].state == turnFailed {
		after, err = h.regenerate(ctx, id)
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
