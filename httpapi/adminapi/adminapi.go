package adminapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// Admin is what the platforms' endpoints read of a gateway;
// gateway.Gateway is one.
type Admin interface {
	Status(ctx context.Context) ([]gateway.AdapterStatus, error)
	ReceiveLog(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error)
	Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error)
	// Check walks the Test for one platform; an unknown one is not_found.
	Check(ctx context.Context, platform string) (gateway.CheckResult, error)
}

// Rows is what is read from the store itself: the receive log and outbox
// when no gateway is configured, and the charts' counts. store.Store is
// one.
type Rows interface {
	ListReceive(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error)
	ListOutbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error)
	store.StatsReader
	store.IncidentsReader
}

// Config configures the admin endpoints.
type Config struct {
	// Admin is the gateway. Defaults to nil: no chat platform; the
	// endpoints read Store and say so in the platforms' hint.
	Admin Admin
	// Store is required.
	Store Rows
	// NoPlatformHint is what GET /v1/adapters says without Admin.
	NoPlatformHint string
	// Mailbox is the tour's dev mailbox, listed by GET /v1/devmail.
	// Defaults to nil: that endpoint says it is not enabled.
	Mailbox Mailbox
	// WriteError answers an error (httpapi's code → status mapping).
	// Defaults to a plain 500 with the message.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// Now defaults to time.Now.
	Now func() time.Time
}

// API serves the admin endpoints.
type API struct {
	cfg Config
}

// New builds the admin endpoints.
func New(cfg Config) *API {
	if cfg.Store == nil {
		panic("adminapi: New needs a Store")
	}
	if cfg.WriteError == nil {
		cfg.WriteError = func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, gh.ErrorMessage(err), http.StatusInternalServerError)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &API{cfg: cfg}
}

var (
	receiveOutcomes = map[string]bool{"": true, chat.ReceiveHandedOn: true, chat.ReceiveDropped: true}
	outboxStates    = map[string]bool{"": true, store.OutboxPending: true, store.OutboxSending: true, store.OutboxSent: true, store.OutboxDead: true}
)

// list starts a listing: the limit parses, and the filter named param
// holds one of allowed (or nothing).
func (a *API) list(w http.ResponseWriter, r *http.Request, param string, allowed map[string]bool, want string) (int, bool) {
	limit, err := queryLimit(r, 100, 1000)
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return 0, false
	}
	if v := r.URL.Query().Get(param); !allowed[v] {
		a.cfg.WriteError(w, r, gh.Errorf(gh.CodeInvalid, "%s must be %s, not %q", param, want, v))
		return 0, false
	}
	return limit, true
}

// queryLimit parses limit in [1, max]; def when absent.
func queryLimit(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > max {
		return 0, gh.Errorf(gh.CodeInvalid, "limit must be an integer from 1 to %d, not %q", max, v)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeEntries answers a listing: {"entries": [...]}, an empty list
// rather than null.
func writeEntries[T any](a *API, w http.ResponseWriter, r *http.Request, rows []T, err error) {
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return
	}
	if rows == nil {
		rows = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": rows})
}

// ReceiveLog is GET /v1/receive-log?platform=&outcome=&reason=&before=&limit=.
func (a *API) ReceiveLog(w http.ResponseWriter, r *http.Request) {
	limit, ok := a.list(w, r, "outcome", receiveOutcomes, "handed_on or dropped")
	if !ok {
		return
	}
	q := r.URL.Query()
	var before int64
	if b := q.Get("before"); b != "" {
		var err error
		if before, err = strconv.ParseInt(b, 10, 64); err != nil || before <= 0 {
			a.cfg.WriteError(w, r, gh.Errorf(gh.CodeInvalid, "before must be a positive row id, not %q", b))
			return
		}
	}
	f := store.ReceiveFilter{Platform: q.Get("platform"), Outcome: q.Get("outcome"), Reason: q.Get("reason"), Before: before, Limit: limit}
	var rows []store.ReceiveEntry
	var err error
	if a.cfg.Admin != nil {
		rows, err = a.cfg.Admin.ReceiveLog(r.Context(), f)
	} else {
		rows, err = a.cfg.Store.ListReceive(r.Context(), f)
	}
	writeEntries(a, w, r, rows, err)
}

// Adapters is GET /v1/adapters.
func (a *API) Adapters(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Admin == nil {
		writeJSON(w, http.StatusOK, map[string]any{"adapters": []gateway.AdapterStatus{}, "hint": a.cfg.NoPlatformHint})
		return
	}
	st, err := a.cfg.Admin.Status(r.Context())
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return
	}
	if st == nil {
		st = []gateway.AdapterStatus{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"adapters": st})
}

// Check is POST /v1/adapters/{platform}/check: the Test, walked now on
// this replica. It answers 200 whether or not the steps pass (ok says);
// an unknown platform is 404.
func (a *API) Check(w http.ResponseWriter, r *http.Request) {
	platform := r.PathValue("platform")
	if a.cfg.Admin == nil {
		a.cfg.WriteError(w, r, gh.Errorf(gh.CodeNotFound, "no chat platform is served here, so there is no %q to test. %s", platform, a.cfg.NoPlatformHint))
		return
	}
	res, err := a.cfg.Admin.Check(r.Context(), platform)
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Outbox is GET /v1/outbox?platform=&state=&session=&limit=.
func (a *API) Outbox(w http.ResponseWriter, r *http.Request) {
	limit, ok := a.list(w, r, "state", outboxStates, "pending, sending, sent or dead")
	if !ok {
		return
	}
	q := r.URL.Query()
	f := store.OutboxFilter{Platform: q.Get("platform"), State: q.Get("state"), SessionID: q.Get("session"), Limit: limit}
	var rows []store.OutboxEntry
	var err error
	if a.cfg.Admin != nil {
		rows, err = a.cfg.Admin.Outbox(r.Context(), f)
	} else {
		rows, err = a.cfg.Store.ListOutbox(r.Context(), f)
	}
	writeEntries(a, w, r, rows, err)
}
