package httpapi_test

import (
	"net/http"
	"os"
	"testing"
)

// testToken is the API token of the servers this package's tests build
// with httpapi.New directly (newEnv defaults to it too).
const testToken = "test-api-token"

// TestMain gives this process's default HTTP client a transport that
// sends testToken with a request that carries no Authorization header of
// its own, as an API client holding the token does; a test about a
// missing or wrong credential sets the header (or uses env.do).
func TestMain(m *testing.M) {
	http.DefaultTransport = tokenTransport{base: http.DefaultTransport}
	os.Exit(m.Run())
}

type tokenTransport struct{ base http.RoundTripper }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, has := r.Header["Authorization"]; !has && r.Header.Get("Cookie") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+testToken)
	}
	return t.base.RoundTrip(r)
}
