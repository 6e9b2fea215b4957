package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
)

// An input may choose a thinking level; the committed message carries it,
// and a level no provider knows is refused with 400 before anything is
// committed.
func TestInputThinkingLevel(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		e.input("s1", map[string]any{"text": "think hard", "selection": "anthropic:claude-sonnet-4-5", "thinking": "high"})
		evs := e.events("s1", "").Events
		if m := userMessage(t, evs[0]); m.Thinking != gh.ThinkingHigh || m.Selection != "anthropic:claude-sonnet-4-5" {
			t.Fatalf("committed %+v", m)
		}
		for _, bad := range []string{"extreme", "HIGH", "none", " low"} {
			r := e.do("POST", "/v1/sessions/s1/input", map[string]any{"text": "again", "thinking": bad})
			r.expect(t, http.StatusBadRequest, gh.CodeInvalid)
			if !strings.Contains(r.message(t), "thinking") {
				t.Fatalf("%q refused with %q, want a message naming thinking", bad, r.message(t))
			}
		}
		if n := len(e.events("s1", "").Events); n != 1 {
			t.Fatalf("%d events after refused inputs, want 1", n)
		}
		// A repeat of a requestId with another level is another request.
		e.input("s1", map[string]any{"text": "once", "requestId": "r-t", "thinking": "low"})
		e.do("POST", "/v1/sessions/s1/input", map[string]any{"text": "once", "requestId": "r-t", "thinking": "medium"}).
			expect(t, http.StatusConflict, gh.CodeIdempotencyConflict)
	})
}
