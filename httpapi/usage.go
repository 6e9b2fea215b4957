package httpapi

import (
	"net/http"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// usage is GET /v1/usage?by=user|model&since=RFC3339&user=: the ledger
// summed. since defaults to 24 hours ago.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	by := q.Get("by")
	if by == "" {
		by = "user"
	}
	since := time.Now().Add(-24 * time.Hour)
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, r, s.log, gh.Errorf(gh.CodeInvalid, "since must be an RFC 3339 time such as 2026-11-30T00:00:00Z, not %q", v))
			return
		}
		since = t
	}
	rows, err := s.k.Usage(r.Context(), by, since, q.Get("user"))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if rows == nil {
		rows = []gh.UsageRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"by": by, "since": since.UTC(), "usage": rows})
}
