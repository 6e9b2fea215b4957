package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// auth requires the API token, when one is configured, as
// "Authorization: Bearer <token>" or, for EventSource (which cannot set
// headers), the access_token query parameter.
func (s *Server) auth(next http.HandlerFunc) http.Handler {
	if s.cfg.APIToken == "" {
		return s.sameMachine(next)
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

// sameMachine guards the API when no token is set (the gateway then only
// listens on loopback): a web page elsewhere must not drive it through the
// user's browser. The Host must name this machine (a DNS-rebinding page
// has its own name there), and a cross-origin Origin is refused (browsers
// send one with every cross-site POST, form or fetch). curl and other
// clients send no Origin and pass.
func (s *Server) sameMachine(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			writeError(w, r, s.log, gh.Errorf(gh.CodeUnauthorized, "host %q is not this machine: set GATEHOUSE_API_TOKEN to serve the API under another name", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				writeError(w, r, s.log, gh.Errorf(gh.CodeUnauthorized, "cross-origin request from %q refused", o))
				return
			}
		}
		next(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
