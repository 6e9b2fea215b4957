package httpapi

import (
	"context"
	"net/http"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/store"
)

// PeopleKeeper lets people in without a restart (pairing); people.Admin
// is one.
type PeopleKeeper interface {
	List(ctx context.Context) (people.List, error)
	Approve(ctx context.Context, code, by string) (store.Person, error)
	Allow(ctx context.Context, platform, userID, by string) (store.Person, bool, error)
	Revoke(ctx context.Context, platform, userID string) error
	SetZone(ctx context.Context, platform, userID, name, zone, by string) (store.PersonZone, error)
	ClearZone(ctx context.Context, platform, userID string) error
}

func (s *Server) people(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.People == nil {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "letting people in is not served by this gateway"))
		return false
	}
	return true
}

// listPeople is GET /v1/people: the pending pairing codes and the people
// let in.
func (s *Server) listPeople(w http.ResponseWriter, r *http.Request) {
	if !s.people(w, r) {
		return
	}
	list, err := s.cfg.People.List(r.Context())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

type letInRequest struct {
	// Code approves a pairing code; Platform and User let someone in
	// directly. One or the other.
	Code     string `json:"code"`
	Platform string `json:"platform"`
	User     string `json:"user"`
	// By names who lets them in, for the record.
	By string `json:"by"`
}

// letIn is POST /v1/people: {"code": "…"} approves a pairing code,
// {"platform": "telegram", "user": "123"} lets a user in directly.
func (s *Server) letIn(w http.ResponseWriter, r *http.Request) {
	if !s.people(w, r) {
		return
	}
	var req letInRequest
	if err := s.body.Decode(w, r, &req, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	by := byWhom(r, req.By)
	code, direct := strings.TrimSpace(req.Code) != "", req.Platform != "" || req.User != ""
	switch {
	case code && direct:
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "give a code, or a platform and a user, not both"))
	case code:
		p, err := s.cfg.People.Approve(r.Context(), req.Code, by)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"person": p, "created": true})
	case direct:
		p, created, err := s.cfg.People.Allow(r.Context(), req.Platform, req.User, by)
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		writeJSON(w, status, map[string]any{"person": p, "created": created})
	default:
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, `body must hold a "code", or a "platform" and a "user"`))
	}
}

// revokePerson is DELETE /v1/people/{platform}/{user}.
func (s *Server) revokePerson(w http.ResponseWriter, r *http.Request) {
	if !s.people(w, r) {
		return
	}
	platform, user := r.PathValue("platform"), r.PathValue("user")
	if err := s.cfg.People.Revoke(r.Context(), platform, user); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked": map[string]string{"platform": platform, "userId": user}})
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// byWhom says who made an admin change, and where, for the record: the
// body's "by", clipped, and the surface (web when the admin page sent it).
func byWhom(r *http.Request, by string) string {
	surface := "api"
	if r.Header.Get("X-Gatehouse-Source") == "web" {
		surface = "web"
	}
	if b := strings.TrimSpace(by); b != "" {
		return clip(b, 100) + " (" + surface + ")"
	}
	return surface
}

type zoneRequest struct {
	// TimeZone is an IANA name ("Europe/Berlin").
	TimeZone string `json:"timeZone"`
	// By names who sets it, for the record.
	By string `json:"by"`
}

// setZone is PUT /v1/people/{platform}/{user}/zone: {"timeZone":
// "Europe/Berlin"} sets the person's time zone, as their /tz does.
func (s *Server) setZone(w http.ResponseWriter, r *http.Request) {
	if !s.people(w, r) {
		return
	}
	var req zoneRequest
	if err := s.body.Decode(w, r, &req, false); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	z, err := s.cfg.People.SetZone(r.Context(), r.PathValue("platform"), r.PathValue("user"), "", req.TimeZone, byWhom(r, req.By))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"zone": z})
}

// clearZone is DELETE /v1/people/{platform}/{user}/zone: the gateway's
// time zone applies to the person again.
func (s *Server) clearZone(w http.ResponseWriter, r *http.Request) {
	if !s.people(w, r) {
		return
	}
	platform, user := r.PathValue("platform"), r.PathValue("user")
	if err := s.cfg.People.ClearZone(r.Context(), platform, user); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"cleared": map[string]string{"platform": platform, "userId": user}})
}
