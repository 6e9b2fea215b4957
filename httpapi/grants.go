package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Grants ("Approve for this chat"): listed and revoked here and in /admin.

// grantScope checks a decision's scope: "chat" approves a gate that offers
// a grant; anything else is refused.
func (s *Server) grantScope(ctx context.Context, g gh.Gate, scope string, state gh.GateState, answer string) error {
	if scope != "chat" {
		return gh.Errorf(gh.CodeInvalid, "scope must be chat, not %q", scope)
	}
	if state != gh.GateApproved || answer != "" {
		return gh.Errorf(gh.CodeInvalid, "scope chat goes with decision approve only")
	}
	o, ok, err := s.k.GateOpened(ctx, g)
	if err != nil {
		return err
	}
	if !ok || o.GrantBound == "" {
		return gh.Errorf(gh.CodeInvalid, "gate %q offers no approval for the chat: %s declares no bound for these arguments", g.ID, g.Tool)
	}
	return nil
}

type grantsResponse struct {
	Grants []grantView `json:"grants"`
}

type grantView struct {
	store.Grant
	Active bool `json:"active"`
}

// listGrants is GET /v1/grants[?session=…][&active=true][&limit=n]: the
// grants of this tenant's sessions, newest first.
func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "limit must be 1 to 1000, not %q", v))
			return
		}
		limit = n
	}
	active := false
	switch v := q.Get("active"); v {
	case "", "false", "0":
	case "true", "1":
		active = true
	default:
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "active must be true or false, not %q", v))
		return
	}
	session := q.Get("session")
	if session != "" {
		if err := s.ownSession(r.Context(), session); err != nil {
			writeError(w, r, s.log, err)
			return
		}
	}
	now := time.Now()
	list, err := s.cfg.Store.ListGrants(r.Context(), session, active, now, limit)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	out := grantsResponse{Grants: []grantView{}}
	for _, g := range list {
		if session == "" {
			// Another tenant's grants are not listed.
			if err := s.ownSession(r.Context(), g.SessionID); err != nil {
				continue
			}
		}
		out.Grants = append(out.Grants, grantView{Grant: g, Active: g.Active(now)})
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeGrant is DELETE /v1/grants/{id}: the grant ends now (by the
// operator); grant.revoked goes to its session's log. A grant revoked
// already answers as it was, with revoked false.
func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	g, err := s.cfg.Store.GetGrant(r.Context(), id)
	if err == nil {
		if err = s.ownSession(r.Context(), g.SessionID); gh.IsCode(err, gh.CodeUnknownSession) {
			err = gh.Errorf(gh.CodeNotFound, "no grant %q", id)
		}
	}
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	surface := "api"
	if r.Header.Get("X-Gatehouse-Source") == "web" {
		surface = "web"
	}
	g, revoked, err := s.k.RevokeGrant(r.Context(), id, gh.LocalUser, surface)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		grantView
		Revoked bool `json:"revoked"`
	}{grantView{Grant: g, Active: g.Active(time.Now())}, revoked})
}
