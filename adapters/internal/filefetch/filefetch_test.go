package filefetch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/internal/filefetch"
)

// Downloads as every adapter makes them: the bytes within the bound, a
// status as a typed error, the bound by Content-Length and by the body,
// a redirect off the allowed host refused before it is followed, a
// foreign URL never requested, and no error quoting the URL's secret.
func TestFetch(t *testing.T) {
	var foreignHits int
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreignHits++ }))
	defer foreign.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/secret-token/ok":
			if r.Header.Get("Authorization") != "Bearer t" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
			w.Write([]byte("# hi"))
		case "/secret-token/big":
			w.Write([]byte(strings.Repeat("a", 100)))
		case "/secret-token/stream":
			w.Header().Set("Content-Type", "text/plain")
			for range 10 {
				w.Write([]byte(strings.Repeat("b", 10)))
				w.(http.Flusher).Flush()
			}
		case "/secret-token/away":
			http.Redirect(w, r, foreign.URL+"/x", http.StatusFound)
		case "/secret-token/gone":
			w.WriteHeader(http.StatusGone)
		default:
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	req := func(path string, max int64) filefetch.Request {
		return filefetch.Request{URL: srv.URL + path, Allowed: func(u *url.URL) bool { return u.Host == base.Host }, What: "file",
			Header: http.Header{"Authorization": {"Bearer t"}}, Max: max}
	}
	ctx := context.Background()
	if body, mt, err := filefetch.Fetch(ctx, req("/secret-token/ok", 10)); err != nil || string(body) != "# hi" || mt != "text/markdown" {
		t.Fatalf("ok: %q %q %v", body, mt, err)
	}
	for path, code := range map[string]gh.Code{"/secret-token/big": gh.CodePayloadTooLarge, "/secret-token/stream": gh.CodePayloadTooLarge,
		"/secret-token/gone": gh.CodeNotFound, "/secret-token/502": gh.CodeUnavailable, "/secret-token/away": gh.CodeUnavailable} {
		_, _, err := filefetch.Fetch(ctx, req(path, 50))
		if !gh.IsCode(err, code) || strings.Contains(err.Error(), "secret-token") {
			t.Errorf("%s: %v, want %s without the URL", path, err, code)
		}
	}
	r := req("", 50)
	r.URL = foreign.URL + "/y"
	if _, _, err := filefetch.Fetch(ctx, r); !gh.IsCode(err, gh.CodeInvalid) {
		t.Errorf("a foreign URL: %v", err)
	}
	if foreignHits != 0 {
		t.Fatalf("the foreign host was asked %d times", foreignHits)
	}
}
