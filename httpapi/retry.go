package httpapi

import (
	"encoding/json"
	"net/http"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// retryKeyPrefix keys a retry by its request id, apart from inputs'.
const retryKeyPrefix = "retry:"

type retryRequest struct {
	RequestID string `json:"requestId"`
}

// retry is POST /v1/sessions/{id}/retry: the session's last turn failed,
// and it runs again. The retry is committed as an input (turn.retry) on
// the same path as a message, so it queues a run, is idempotent by request
// id, and a crash after the commit loses nothing; the run answers what the
// failed turn left unanswered. A session whose last turn did not fail (or
// is still running) has nothing to retry: 409 conflict.
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	// First, so a chat's session hears external-session, not "nothing to
	// retry" (the kernel refuses it too, whatever the edge).
	if err := gh.CheckEdgeSession(id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var req retryRequest
	if err := s.body.Decode(w, r, &req, true); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := checkRequestID(req.RequestID); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.ownSession(ctx, id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var key string
	if req.RequestID != "" {
		key = retryKeyPrefix + req.RequestID
		// A repeat of a retry that was committed answers as it did, even
		// once its run has settled.
		if ev, found, err := s.k.EventByKey(ctx, id, key); err != nil {
			writeError(w, r, s.log, err)
			return
		} else if found {
			run, _, err := s.k.LatestRun(ctx, id)
			if err != nil {
				writeError(w, r, s.log, err)
				return
			}
			writeJSON(w, http.StatusAccepted, inputResponse{Seq: ev.Seq, RunID: run.ID, Duplicate: true})
			return
		}
	}
	run, ok, err := s.k.LatestRun(ctx, id)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if !ok || run.State != gh.RunFailed {
		state := "none yet"
		if ok {
			state = string(run.State)
		}
		writeError(w, r, s.log, gh.Errorf(gh.CodeConflict, "nothing to retry: the session's last turn did not fail (its run: %s)", state))
		return
	}
	payload, err := json.Marshal(gh.TurnRetry{RunID: run.ID, RequestID: req.RequestID, By: gh.LocalUser})
	if err != nil {
		writeError(w, r, s.log, gh.Wrap(gh.CodeInternal, err, "encode turn.retry"))
		return
	}
	c, err := s.k.EdgeCommit(ctx, kernel.EdgeInput{Tenant: s.cfg.Tenant, SessionID: id,
		Event: gh.NewEvent{Kind: gh.KindTurnRetry, Payload: payload, Key: key}})
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.log.Info("a failed turn was retried", "session", id, "run", run.ID, "requestId", req.RequestID)
	writeJSON(w, http.StatusAccepted, inputResponse{Seq: c.Event.Seq, RunID: c.RunID, Duplicate: c.Duplicate})
}
