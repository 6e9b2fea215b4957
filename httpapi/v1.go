package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/kernel"
)

// Limits of the /v1 API.
const (
	maxTitleLen      = 500  // characters of a session title or cancel reason
	maxRequestIDLen  = 200  // characters of a requestId
	defaultListLimit = 100  // sessions per list
	maxListLimit     = 1000 // sessions per list
	defaultPageLimit = 500  // events per page
	maxPageLimit     = 1000 // events per page
)

// session returns the session if it exists for the server's tenant. A
// session of another tenant is unknown here.
func (s *Server) session(ctx context.Context, id string) (gh.Session, error) {
	sess, err := s.k.Session(ctx, id)
	if err != nil {
		return gh.Session{}, err
	}
	if sess.Tenant != s.cfg.Tenant {
		return gh.Session{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", id)
	}
	return sess, nil
}

// ownSession checks that the session exists for the server's tenant, as
// session does, from the kernel's memory of tenants when it can (no read).
func (s *Server) ownSession(ctx context.Context, id string) error {
	ok, err := s.k.KnownSession(ctx, id, s.cfg.Tenant)
	if err != nil {
		return err
	}
	if !ok {
		return gh.Errorf(gh.CodeUnknownSession, "unknown session %q", id)
	}
	return nil
}

// checkRequestID refuses a requestId (of an input, a retry) that is too
// long or holds control characters.
func checkRequestID(id string) error {
	if utf8.RuneCountInString(id) > maxRequestIDLen || strings.ContainsFunc(id, unicode.IsControl) {
		return gh.Errorf(gh.CodeInvalid, "requestId must be at most %d characters without control characters", maxRequestIDLen)
	}
	return nil
}

type createSessionRequest struct {
	ID    string `json:"id,omitempty"`
	Title string `json:"title,omitempty"`
}

type sessionResponse struct {
	Session gh.Session `json:"session"`
}

// newSessionID returns a random, URL-safe session id.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// createSession: POST /v1/sessions {id?, title?} → 201 {session} when
// created, 200 when it existed (its title is left as it was).
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req createSessionRequest
	if err := s.body.Decode(w, r, &req, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if utf8.RuneCountInString(req.Title) > maxTitleLen {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "title must be at most %d characters", maxTitleLen))
		return
	}
	if req.ID == "" {
		req.ID = newSessionID()
	}
	sess, created, err := s.k.CreateSession(r.Context(), gh.Session{ID: req.ID, Tenant: s.cfg.Tenant, Title: req.Title})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, sessionResponse{Session: sess})
}

// listSessions: GET /v1/sessions?limit= → {sessions}, most recent first.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r, defaultListLimit, maxListLimit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	list, err := s.k.Sessions(r.Context(), s.cfg.Tenant, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if list == nil {
		list = []gh.Session{}
	}
	writeJSON(w, http.StatusOK, map[string][]gh.Session{"sessions": list})
}

type sessionRunResponse struct {
	Session gh.Session `json:"session"`
	Run     *gh.Run    `json:"run"`
}

// getSession: GET /v1/sessions/{id} → {session, run} (run: the latest, or
// null).
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := sessionRunResponse{Session: sess}
	run, ok, err := s.k.LatestRun(r.Context(), sess.ID)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if ok {
		out.Run = &run
	}
	writeJSON(w, http.StatusOK, out)
}

type inputRequest struct {
	Text        string          `json:"text"`
	RequestID   string          `json:"requestId,omitempty"`
	Delivery    gh.Delivery     `json:"delivery,omitempty"`
	Selection   string          `json:"selection,omitempty"`
	Thinking    string          `json:"thinking,omitempty"`
	Attachments []gh.Attachment `json:"attachments,omitempty"`
}

type inputResponse struct {
	Seq int64 `json:"seq"`
	// RunID is the session's active run after the commit; absent on a
	// duplicate.
	RunID     int64 `json:"runId,omitempty"`
	Duplicate bool  `json:"duplicate"`
}

// requestKeyPrefix prefixes a client's requestId to make the idempotency
// key, so it cannot collide with the keys of other surfaces.
const requestKeyPrefix = "req:"

// input: POST /v1/sessions/{id}/input → 202 {seq, runId, duplicate}. The
// first input creates the session. A repeat of a requestId with the same
// body answers the committed seq with duplicate true; with another body,
// 409 idempotency-conflict.
func (s *Server) input(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	// A chat's session is refused before anything else is looked at (the
	// kernel refuses it too, whatever the edge).
	if err := gh.CheckEdgeSession(id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var req inputRequest
	if err := s.body.Decode(w, r, &req, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "text must not be empty"))
		return
	}
	if err := checkRequestID(req.RequestID); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	switch req.Delivery {
	case "":
		req.Delivery = gh.DeliveryQueue
	case gh.DeliveryQueue, gh.DeliveryGuide:
	default:
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "delivery must be %q or %q, not %q", gh.DeliveryQueue, gh.DeliveryGuide, req.Delivery))
		return
	}
	if req.Selection != "" && s.cfg.CheckSelection != nil {
		// A selection no turn could use is refused here, not committed
		// to fail the session's turns.
		if err := s.cfg.CheckSelection(req.Selection); err != nil {
			writeError(w, r, s.log, gh.Wrap(gh.CodeInvalid, err, "selection %q cannot be used", req.Selection))
			return
		}
	}
	// A level no provider knows is refused rather than committed and
	// ignored: the client asked for something it would not get.
	if err := gh.CheckThinking(req.Thinking); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// The session is made on first input; one known to exist for this
	// tenant costs no statement here.
	if known, err := s.k.KnownSession(ctx, id, s.cfg.Tenant); err != nil {
		writeError(w, r, s.log, err)
		return
	} else if !known {
		if _, _, err := s.k.CreateSession(ctx, gh.Session{ID: id, Tenant: s.cfg.Tenant}); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	msg := gh.UserMessage{
		Text: req.Text, RequestID: req.RequestID, Delivery: req.Delivery,
		Selection: req.Selection, Thinking: req.Thinking, Attachments: req.Attachments, Source: "api",
	}
	if strings.EqualFold(r.Header.Get("X-Gatehouse-Source"), "web") {
		msg.Source = "web"
	}
	if msg.Delivery == gh.DeliveryGuide {
		// A guide joins a live turn; with none, it waits like any queued
		// input, and the committed event says so.
		run, ok, err := s.k.LatestRun(ctx, id)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		if !ok || run.State != gh.RunRunning {
			msg.Delivery, msg.RequestedDelivery = gh.DeliveryQueue, gh.DeliveryGuide
		}
	}
	payload, err := json.Marshal(msg)
	if err != nil {
		writeError(w, r, s.log, gh.Wrap(gh.CodeInternal, err, "encode user message"))
		return
	}
	var key string
	if req.RequestID != "" {
		key = requestKeyPrefix + req.RequestID
	}
	c, err := s.k.EdgeCommit(ctx, kernel.EdgeInput{
		Tenant: s.cfg.Tenant, SessionID: id,
		Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload, Key: key},
	})
	if gh.IsCode(err, gh.CodeIdempotencyConflict) && key != "" {
		// The guide downgrade depends on the run's state when the request
		// came; a retry of the same request may see another state. The
		// request is the same when only that resolution differs.
		if ev, found, ferr := s.k.EventByKey(ctx, id, key); ferr == nil && found && sameRequest(ev, msg) {
			c, err = kernel.Committed{Event: ev, Duplicate: true}, nil
		}
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusAccepted, inputResponse{Seq: c.Event.Seq, RunID: c.RunID, Duplicate: c.Duplicate})
}

// sameRequest reports whether the committed event ev and msg come from the
// same request: equal payloads once the delivery is read as requested.
func sameRequest(ev gh.Event, msg gh.UserMessage) bool {
	if ev.Kind != gh.KindUserMessage {
		return false
	}
	var committed gh.UserMessage
	if json.Unmarshal(ev.Payload, &committed) != nil {
		return false
	}
	// Round-trip msg too, so empty and absent lists compare equal.
	b, err := json.Marshal(msg)
	if err != nil {
		return false
	}
	var asked gh.UserMessage
	if json.Unmarshal(b, &asked) != nil {
		return false
	}
	return reflect.DeepEqual(requested(committed), requested(asked))
}

func requested(m gh.UserMessage) gh.UserMessage {
	if m.RequestedDelivery != "" {
		m.Delivery, m.RequestedDelivery = m.RequestedDelivery, ""
	}
	return m
}

type eventsResponse struct {
	Events []gh.Event `json:"events"`
	// LastSeq is the session's last committed seq as this answer knows it
	// (at least the seq of the last event returned).
	LastSeq int64 `json:"lastSeq"`
}

// events: GET /v1/sessions/{id}/events?after=&limit= → {events, lastSeq}.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	after, err := querySeq(r, "after", 0)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	limit, err := queryLimit(r, defaultPageLimit, maxPageLimit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	sess, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	evs, err := s.k.Events(r.Context(), sess.ID, after, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// A notice the kernel committed as facts is worded here, as on a chat.
	for i := range evs {
		evs[i] = cards.Worded(evs[i])
	}
	out := eventsResponse{Events: evs, LastSeq: sess.LastSeq}
	if out.Events == nil {
		out.Events = []gh.Event{}
	}
	if n := len(evs); n > 0 {
		out.LastSeq = max(out.LastSeq, evs[n-1].Seq)
	}
	writeJSON(w, http.StatusOK, out)
}

type cancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

type runResponse struct {
	Run gh.Run `json:"run"`
}

// cancel: POST /v1/sessions/{id}/cancel {reason?} → 200 {run}; 409
// conflict when the session has no active run. A queued or waiting run is
// cancelled at once; a running one is flagged (cancelRequested) and its
// worker stops it at the next lease renewal.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	var req cancelRequest
	if err := s.body.Decode(w, r, &req, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if utf8.RuneCountInString(req.Reason) > maxTitleLen {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "reason must be at most %d characters", maxTitleLen))
		return
	}
	sess, err := s.session(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if req.Reason == "" {
		req.Reason = "cancelled by request"
	}
	run, err := s.k.Cancel(r.Context(), sess.ID, req.Reason)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, runResponse{Run: run})
}

// MissingSetting is one thing this gateway was not configured with, and
// the one message that says what to do about it. cmd builds the list once
// and the same words are logged at start, returned by GET /v1/info and
// shown once by the web chat.
type MissingSetting struct {
	// Setting is the variable that is unset, e.g. GATEHOUSE_MODEL.
	Setting string `json:"setting"`
	// Message says what is missing, what it costs and how to set it.
	Message string `json:"message"`
}

// info tells a client what this gateway runs: its version and model, and
// what is not configured ("missing", each with its one message; "hint"
// repeats the model's for older clients).
func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	missing := s.cfg.Missing
	if missing == nil {
		missing = []MissingSetting{}
	}
	body := map[string]any{"version": s.cfg.Version, "model": s.cfg.Model, "modelConfigured": s.cfg.Model != "", "missing": missing}
	if s.cfg.Model == "" {
		body["hint"] = s.cfg.ModelHint
	}
	if s.cfg.Isolation != nil {
		body["isolation"] = s.cfg.Isolation
	}
	writeJSON(w, http.StatusOK, body)
}
