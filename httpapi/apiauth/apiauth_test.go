package apiauth_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/apiauth"
)

func guarded(a *apiauth.Auth, queryToken bool) http.Handler {
	return a.Require(queryToken, func(w http.ResponseWriter, r *http.Request, err error) {
		if gh.ErrorCode(err) != gh.CodeUnauthorized {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(401)
		_, _ = w.Write([]byte(err.Error()))
	}, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
}

func status(h http.Handler, method, target string, headers ...string) (int, string) {
	r := httptest.NewRequest(method, target, strings.NewReader("{}"))
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func TestRequire(t *testing.T) {
	a := apiauth.New("s3cret")
	h, stream := guarded(a, false), guarded(a, true)
	login := httptest.NewRecorder()
	a.Login(login, httptest.NewRequest("GET", "/login?token=s3cret", nil))
	cookies := login.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %v", cookies)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value
	for _, tc := range []struct {
		name           string
		h              http.Handler
		method, target string
		headers        []string
		want           int
	}{
		{"no credential", h, "GET", "/v1/x", nil, 401},
		{"bearer", h, "POST", "/v1/x", []string{"Authorization", "Bearer s3cret"}, 204},
		{"bearer, any case", h, "POST", "/v1/x", []string{"Authorization", "bEaReR s3cret"}, 204},
		{"wrong bearer", h, "GET", "/v1/x", []string{"Authorization", "Bearer s3cre"}, 401},
		{"empty bearer", h, "GET", "/v1/x", []string{"Authorization", "Bearer "}, 401},
		{"basic scheme", h, "GET", "/v1/x", []string{"Authorization", "Basic s3cret"}, 401},
		{"wrong bearer beats a good cookie", h, "GET", "/v1/x", []string{"Authorization", "Bearer no", "Cookie", cookie}, 401},
		{"query token off the stream", h, "GET", "/v1/x?access_token=s3cret", nil, 401},
		{"query token on the stream", stream, "GET", "/v1/x?access_token=s3cret", nil, 204},
		{"the token is not a cookie", h, "GET", "/v1/x", []string{"Cookie", apiauth.CookieName + "=s3cret"}, 401},
		{"cookie read", h, "GET", "/v1/x", []string{"Cookie", cookie}, 204},
		{"cookie write, no origin headers", h, "POST", "/v1/x", []string{"Cookie", cookie}, 204},
		{"cookie write, same origin", h, "POST", "http://example.com/v1/x", []string{"Cookie", cookie, "Origin", "http://example.com", "Sec-Fetch-Site", "same-origin"}, 204},
		{"cookie write, other origin", h, "POST", "http://example.com/v1/x", []string{"Cookie", cookie, "Origin", "http://evil.test"}, 401},
		{"cookie write, cross-site fetch", h, "DELETE", "http://example.com/v1/x", []string{"Cookie", cookie, "Sec-Fetch-Site", "cross-site"}, 401},
		{"cookie write, same-site sibling", h, "POST", "http://example.com/v1/x", []string{"Cookie", cookie, "Sec-Fetch-Site", "same-site"}, 401},
	} {
		if got, body := status(tc.h, tc.method, tc.target, tc.headers...); got != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, got, body, tc.want)
		}
	}
	if strings.Contains(cookies[0].Value, "s3cret") || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", cookies[0])
	}
	// Another token's cookie does not open this one.
	other := httptest.NewRecorder()
	apiauth.New("other").Login(other, httptest.NewRequest("GET", "/login?token=other", nil))
	oc := other.Result().Cookies()[0]
	if got, _ := status(h, "GET", "/v1/x", "Cookie", oc.Name+"="+oc.Value); got != 401 {
		t.Errorf("another token's cookie: %d", got)
	}
}

func TestLoginRedirectsOnlyHere(t *testing.T) {
	a := apiauth.New("s3cret")
	for next, want := range map[string]string{
		"": "/", "/admin": "/admin", "/admin#card=g1": "/admin#card=g1",
		"//evil.test/": "/", "https://evil.test/": "/", "/\\evil.test": "/", "evil": "/",
	} {
		w := httptest.NewRecorder()
		a.Login(w, httptest.NewRequest("GET", "/login?token=s3cret&next="+strings.NewReplacer("#", "%23", "\\", "%5C").Replace(next), nil))
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != want {
			t.Errorf("next=%q: %d to %q, want %q", next, w.Code, w.Header().Get("Location"), want)
		}
	}
	w := httptest.NewRecorder()
	a.Login(w, httptest.NewRequest("GET", "/login?token=nope", nil))
	if w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Errorf("wrong token: %d %v", w.Code, w.Result().Cookies())
	}
}

// BenchmarkRequire measures the credential check on every /v1 request
// against the bare handler, in the same run: the cost the token adds.
func BenchmarkRequire(b *testing.B) {
	a := apiauth.New("a-generated-token-of-forty-three-characters-")
	next := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }
	bare := http.HandlerFunc(next)
	checked := a.Require(false, func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(401) }, next)
	run := func(h http.Handler) time.Duration {
		r := httptest.NewRequest("GET", "/v1/info", nil)
		r.Header.Set("Authorization", "Bearer a-generated-token-of-forty-three-characters-")
		start := time.Now()
		for range b.N {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
		}
		return time.Since(start)
	}
	b.ResetTimer()
	base := run(bare)
	ours := run(checked)
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "checked-ns/op")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "bare-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "x-bare")
}
