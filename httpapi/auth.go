package httpapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/httpapi/apiauth"
)

// auth requires the API token when one is configured (apiauth.Token; the
// query token only where queryToken is set: the SSE stream) and this
// machine when none is (apiauth.SameMachine). A refusal is answered in
// the API's error format.
func (s *Server) auth(next http.HandlerFunc, queryToken bool) http.Handler {
	refuse := func(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, s.log, err) }
	if s.cfg.APIToken == "" {
		return apiauth.SameMachine(refuse, next)
	}
	return apiauth.Token(s.cfg.APIToken, queryToken, refuse, next)
}
