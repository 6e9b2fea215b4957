package httpapi

import (
	"context"
	"net/http"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// Admin is what the admin endpoints read; gateway.Gateway is one.
type Admin interface {
	Status(ctx context.Context) ([]gateway.AdapterStatus, error)
	ReceiveLog(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error)
	Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error)
}

var (
	receiveOutcomes = map[string]bool{"": true, chat.ReceiveHandedOn: true, chat.ReceiveDropped: true}
	outboxStates    = map[string]bool{"": true, store.OutboxPending: true, store.OutboxSending: true, store.OutboxSent: true, store.OutboxDead: true}
)

// adminList starts an admin listing: a platform is configured, the limit
// parses, and the filter named param holds one of allowed (or nothing).
func (s *Server) adminList(w http.ResponseWriter, r *http.Request, param string, allowed map[string]bool, want string) (int, bool) {
	if s.cfg.Admin == nil {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "no chat platform is configured on this gateway"))
		return 0, false
	}
	limit, err := queryLimit(r, 100, 1000)
	if err != nil {
		writeError(w, r, s.log, err)
		return 0, false
	}
	if v := r.URL.Query().Get(param); !allowed[v] {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "%s must be %s, not %q", param, want, v))
		return 0, false
	}
	return limit, true
}

// writeEntries answers a listing: {"entries": [...]}, an empty list
// rather than null.
func writeEntries[T any](s *Server, w http.ResponseWriter, r *http.Request, rows []T, err error) {
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if rows == nil {
		rows = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": rows})
}

// receiveLog is GET /v1/receive-log?platform=&outcome=&reason=&before=&limit=.
func (s *Server) receiveLog(w http.ResponseWriter, r *http.Request) {
	limit, ok := s.adminList(w, r, "outcome", receiveOutcomes, "handed_on or dropped")
	if !ok {
		return
	}
	q := r.URL.Query()
	var before int64
	if b := q.Get("before"); b != "" {
		var err error
		if before, err = strconv.ParseInt(b, 10, 64); err != nil || before <= 0 {
			writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "before must be a positive row id, not %q", b))
			return
		}
	}
	rows, err := s.cfg.Admin.ReceiveLog(r.Context(), store.ReceiveFilter{Platform: q.Get("platform"), Outcome: q.Get("outcome"),
		Reason: q.Get("reason"), Before: before, Limit: limit})
	writeEntries(s, w, r, rows, err)
}

// adapters is GET /v1/adapters.
func (s *Server) adapters(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Admin == nil {
		writeJSON(w, http.StatusOK, map[string]any{"adapters": []gateway.AdapterStatus{},
			"hint": s.cfg.NoPlatformHint})
		return
	}
	st, err := s.cfg.Admin.Status(r.Context())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"adapters": st})
}

// outbox is GET /v1/outbox?platform=&state=&session=&limit=.
func (s *Server) outbox(w http.ResponseWriter, r *http.Request) {
	limit, ok := s.adminList(w, r, "state", outboxStates, "pending, sending, sent or dead")
	if !ok {
		return
	}
	q := r.URL.Query()
	rows, err := s.cfg.Admin.Outbox(r.Context(), store.OutboxFilter{Platform: q.Get("platform"), State: q.Get("state"), SessionID: q.Get("session"), Limit: limit})
	writeEntries(s, w, r, rows, err)
}

// hooks mounts the platforms' webhooks at /hooks/<platform>. They sit
// outside the API token: each platform proves itself with its own secret
// or signature, which its adapter checks. Bodies are bounded like the
// API's, in size and in time (hookBody).
func (s *Server) hooks(mux *http.ServeMux) {
	for platform, h := range s.cfg.Hooks {
		mux.Handle("POST /hooks/"+platform, s.hookBody(h))
	}
}
