package httpapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/httpapi/apiauth"
)

// auth requires a credential (apiauth.Auth.Require: the token, or the
// session cookie of GET /login; the query token only where queryToken is
// set: the SSE stream). A refusal is answered in the API's error format.
func (s *Server) auth(next http.HandlerFunc, queryToken bool) http.Handler {
	return s.authWith(func(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, s.log, err) }, next, queryToken)
}

// OpenAIHandler is the OpenAI-compatible endpoint (*openaiapi.Handler):
// Refuse answers a refused token in its own error shape, Drain ends its
// waits when the server stops.
type OpenAIHandler interface {
	http.Handler
	Refuse(w http.ResponseWriter, r *http.Request, err error)
	Drain()
}

// authWith is auth with refusals answered by refuse.
func (s *Server) authWith(refuse apiauth.Refuse, next http.HandlerFunc, queryToken bool) http.Handler {
	return s.creds.Require(queryToken, refuse, next)
}
