package apiauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// Refuse answers a request that was refused; err is unauthorized.
type Refuse func(w http.ResponseWriter, r *http.Request, err error)

// Token requires token as "Authorization: Bearer <token>". Where
// queryToken is set (the SSE stream: EventSource cannot set headers) the
// access_token query parameter counts too. Elsewhere a query token is
// refused with a message saying to use the header: query strings end up
// in proxy and access logs, so a token there is one to avoid everywhere
// it is not needed.
func Token(token string, queryToken bool, refuse Refuse, next http.HandlerFunc) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok && r.URL.Query().Has("access_token") {
			if !queryToken {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
				refuse(w, r, gh.Errorf(gh.CodeUnauthorized,
					"the access_token query parameter is accepted only on GET /v1/sessions/{id}/stream; send the token in the Authorization: Bearer header"))
				return
			}
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
			refuse(w, r, gh.Errorf(gh.CodeUnauthorized, "%s", msg))
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

// SameMachine guards the API when no token is set (the gateway then only
// listens on loopback): a web page elsewhere must not drive it through the
// user's browser. The Host must name this machine (a DNS-rebinding page
// has its own name there), and a cross-origin Origin is refused (browsers
// send one with every cross-site POST, form or fetch). curl and other
// clients send no Origin and pass.
func SameMachine(refuse Refuse, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			refuse(w, r, gh.Errorf(gh.CodeUnauthorized, "host %q is not this machine: set GATEHOUSE_API_TOKEN to serve the API under another name", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				refuse(w, r, gh.Errorf(gh.CodeUnauthorized, "cross-origin request from %q refused", o))
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
