package apiauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Refuse answers a request that was refused; err is unauthorized.
type Refuse func(w http.ResponseWriter, r *http.Request, err error)

// CookieName is the session cookie Login sets and Credential accepts.
const CookieName = "gatehouse_session"

// cookieMaxAge is how long a browser keeps the session cookie. A changed
// token ends every session at once (the cookie is derived from it).
const cookieMaxAge = 30 * 24 * time.Hour

// Auth checks the credentials of one API: every request must carry the
// token, as "Authorization: Bearer <token>" (API clients, the OpenAI
// endpoint's API key), as the access_token query parameter where a route
// allows it, or as the session cookie Login gave a browser. There is no
// request without one: on loopback too, since another local user, a
// process the agent started or a web page driving the user's browser
// would otherwise decide gates as a person.
type Auth struct {
	want   [32]byte // sha256 of the token
	cookie string   // the session cookie's value, derived from the token
}

// New returns the checks for token. It panics on an empty token: an API
// with no credential is not a configuration this package offers.
func New(token string) *Auth {
	if token == "" {
		panic("apiauth: New needs a token")
	}
	return &Auth{want: sha256.Sum256([]byte(token)), cookie: cookieValue(token)}
}

// cookieValue is the session cookie for token: an HMAC of it, so the
// cookie is not the token (a cookie that leaks does not work as a bearer
// token or in a login link), yet every replica holding the token accepts
// it without a session table.
func cookieValue(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("gatehouse web session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// Valid reports whether got is the token, in constant time.
func (a *Auth) Valid(got string) bool {
	// Hashing first makes the compare constant-time in the token's
	// length too.
	sum := sha256.Sum256([]byte(got))
	return got != "" && subtle.ConstantTimeCompare(sum[:], a.want[:]) == 1
}

// validCookie reports whether r carries the session cookie.
func (a *Auth) validCookie(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && c.Value != "" && hmac.Equal([]byte(c.Value), []byte(a.cookie))
}

// Require lets next serve only a request with a valid credential. Where
// queryToken is set (the SSE stream: EventSource cannot set headers) the
// access_token query parameter counts too. Elsewhere a query token is
// refused with a message saying to use the header: query strings end up
// in proxy and access logs, so a token there is one to avoid everywhere
// it is not needed. A request carried by the cookie alone is a browser's,
// so a write must also come from this origin (SameOrigin): the cookie is
// SameSite=Strict already, and this check keeps a write safe from a
// browser or proxy that does not honour that.
func (a *Auth) Require(queryToken bool, refuse Refuse, next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok && r.URL.Query().Has("access_token") {
			if !queryToken {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
				refuse(w, r, gh.Errorf(gh.CodeUnauthorized,
					"the access_token query parameter is accepted only on GET /v1/sessions/{id}/stream; send the token in the Authorization: Bearer header"))
				return
			}
			got, ok = r.URL.Query().Get("access_token"), true
		}
		switch {
		case ok && a.Valid(got):
			next(w, r)
		case ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
			refuse(w, r, gh.Errorf(gh.CodeUnauthorized, "wrong API token"))
		case a.validCookie(r):
			if !safeMethod(r.Method) {
				if err := SameOrigin(r); err != nil {
					refuse(w, r, err)
					return
				}
			}
			next(w, r)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatehouse"`)
			refuse(w, r, gh.Errorf(gh.CodeUnauthorized,
				"missing API token: send it as Authorization: Bearer <token> (gatehouse token prints it), or open the login link from the start log"))
		}
	})
}

// Login serves GET /login?token=…: a valid token is traded for the
// session cookie (HttpOnly, SameSite=Strict) and the browser is sent on
// to next (a path on this server, "/" by default), so the token leaves the
// address bar and the history entry at once — the way Jupyter's login
// link works. A wrong or missing token gets 401 and a page saying where
// the link is.
func (a *Auth) Login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !a.Valid(r.URL.Query().Get("token")) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("This login link's token is missing or wrong.\n" +
			"The gateway prints its login link when it starts; `gatehouse token --url` prints it again.\n"))
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: a.cookie, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"),
		MaxAge: int(cookieMaxAge / time.Second),
	})
	http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// localPath is next when it is a path on this server, else "/": a login
// link must not become an open redirect.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

// SameOrigin refuses a browser request sent from another origin: its
// Origin, when it has one, must name the Host it was sent to, and its
// Sec-Fetch-Site, when it has one, must be same-origin (or none: typed
// into the address bar). A DNS-rebinding page has its own name in the
// Host and Origin both, but no cookie of this server's to send.
func SameOrigin(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return gh.Errorf(gh.CodeUnauthorized, "cross-origin request from %q refused", o)
		}
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return gh.Errorf(gh.CodeUnauthorized, "cross-site request (Sec-Fetch-Site: %s) refused", s)
	}
	return nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		// A header that is there but not a bearer token is a wrong
		// credential, not a missing one: say so, do not fall back to
		// the cookie.
		return h, true
	}
	return strings.TrimSpace(token), true
}
