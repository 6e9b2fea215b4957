package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// auth requires the API token, when one is configured, as
// "Authorization: Bearer <token>" or, for EventSource (which cannot set
// headers), the access_token query parameter.
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	if s.cfg.APIToken == "" {
		return next
	}
	want := sha256.Sum256([]byte(s.cfg.APIToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok {
			got = r.URL.Query().Get("access_token")
		}
		// Hashing first makes the compare constant-time in the token's
		// length too.
		sum := sha256.Sum256([]byte(got))
		if got == "" || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
			msg := "missing API token"
			if got != "" {
				msg = "wrong API token"
			}
			writeError(w, r, s.log, gh.Errorf(gh.CodeUnauthorized, "%s", msg))
			return
		}
		next(w, r)
	})
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
