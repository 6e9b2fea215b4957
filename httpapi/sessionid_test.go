package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi"
)

// Session ids follow the documented rule on both ways of creating a
// session: the ids the gateway, the web chat and clients make pass; a
// control character, a bidi control, a zero-width or line separator, or
// a Unicode space is 400 invalid naming the rule and the character, and
// creates nothing.
func TestSessionIDRule(t *testing.T) {
	run(t, httpapi.Config{}, func(t *testing.T, e *env) {
		// (A chat platform's ids, tg_…, are refused here: external-session.)
		for _, id := range []string{"oai_6f0c08d0b2e7796f2194", "web-0123456789abcdef0123", "support-42",
			"3f2b8c1e-6a4d-4e1f-9b2a-7c5d3e1f0a9b", "日本語", "Invoice:2026.Q3", strings.Repeat("é", 200)} {
			e.do("POST", "/v1/sessions", map[string]string{"id": id}).expect(t, http.StatusCreated, "")
			e.input(url.PathEscape(id), map[string]string{"text": "hi"})
		}
		// The web chat creates its sessions with an empty body: the id the
		// server makes passes the rule.
		var made struct{ Session gh.Session }
		e.do("POST", "/v1/sessions", `{}`).expect(t, http.StatusCreated, "").decode(t, &made)
		e.input(made.Session.ID, map[string]string{"text": "hi"})

		for id, names := range map[string]string{
			"a\x01b":        "U+0001",
			"a\x7fb":        "U+007F",
			"a\u0085b":      "U+0085",
			"inv\u202eoice": "U+202E",
			"a\u2066b":      "U+2066",
			"a\u200bb":      "U+200B",
			"\ufeffs1":      "U+FEFF",
			"a\u2028b":      "U+2028",
			"a\u00a0b":      "U+00A0",
			"a\u3000b":      "U+3000",
			"a b":           "U+0020",
		} {
			for _, r := range []reply{
				e.do("POST", "/v1/sessions", map[string]string{"id": id}),
				e.do("POST", "/v1/sessions/"+url.PathEscape(id)+"/input", map[string]string{"text": "hi"}),
			} {
				msg := r.expect(t, http.StatusBadRequest, gh.CodeInvalid).message(t)
				if !strings.Contains(msg, "session id must be 1–200 characters") || !strings.Contains(msg, names) {
					t.Errorf("%+q: message %q does not state the rule and name %s", id, msg, names)
				}
			}
			if _, err := e.k.Session(context.Background(), id); !gh.IsCode(err, gh.CodeUnknownSession) {
				t.Errorf("%+q was refused, yet a session exists: %v", id, err)
			}
		}
		e.do("POST", "/v1/sessions", map[string]string{"id": strings.Repeat("x", 201)}).expect(t, http.StatusBadRequest, gh.CodeInvalid)
	})
}
