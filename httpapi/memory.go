package httpapi

import (
	"context"
	"net/http"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// MemoryKeeper lists and forgets what is kept about a person; memory.Memory
// is one.
type MemoryKeeper interface {
	List(ctx context.Context, userKey string) ([]store.MemoryFact, error)
	Forget(ctx context.Context, userKey string, factID int64) error
}

// userKeyOf is the person whose memory a request is about: ?user=, else
// "local" (web and API input carry no person yet).
func userKeyOf(r *http.Request) string {
	if u := r.URL.Query().Get("user"); u != "" {
		return u
	}
	return "local"
}

// listMemory is GET /v1/memory?user=.
func (s *Server) listMemory(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Memory == nil {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "memory is not enabled on this gateway"))
		return
	}
	facts, err := s.cfg.Memory.List(r.Context(), userKeyOf(r))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if facts == nil {
		facts = []store.MemoryFact{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"facts": facts})
}

// forgetMemory is DELETE /v1/memory/{id}?user=.
func (s *Server) forgetMemory(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Memory == nil {
		writeError(w, r, s.log, gh.Errorf(gh.CodeUnavailable, "memory is not enabled on this gateway"))
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "fact id must be a positive integer, not %q", r.PathValue("id")))
		return
	}
	if err := s.cfg.Memory.Forget(r.Context(), userKeyOf(r), id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"forgotten": id})
}
