package main

import (
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// testAPIToken is the API token of every gateway a test here starts,
// unless the test clears GATEHOUSE_API_TOKEN to have the gateway generate
// one (token_test.go). Every child process inherits it from this
// process's environment.
const testAPIToken = "cmd-gatehouse-test-api-token"

// TestMain gives the gateways this package starts a known token, and this
// process's HTTP clients a transport that sends it to loopback — as a
// local tool holding the token would. A test about requests without a
// credential uses bareClient.
func TestMain(m *testing.M) {
	os.Setenv("GATEHOUSE_API_TOKEN", testAPIToken)
	http.DefaultTransport = &tokenTransport{base: http.DefaultTransport}
	noKeepAlive.Transport = &tokenTransport{base: noKeepAlive.Transport}
	os.Exit(m.Run())
}

// bareClient sends exactly what a test sets: no token.
var bareClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// tokenTransport adds "Authorization: Bearer <token>" to a request for a
// loopback address that carries no credential of its own: the token the
// test registered for that address (a gateway that generated its own),
// else testAPIToken.
type tokenTransport struct{ base http.RoundTripper }

var (
	tokensMu sync.Mutex
	tokens   = map[string]string{}
)

// useToken makes the test's clients send token to the gateway at addr.
func useToken(t *testing.T, addr, token string) {
	tokensMu.Lock()
	defer tokensMu.Unlock()
	tokens[addr] = token
	t.Cleanup(func() { tokensMu.Lock(); delete(tokens, addr); tokensMu.Unlock() })
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, has := r.Header["Authorization"]; !has && r.Header.Get("Cookie") == "" && isLoopbackHost(r.URL.Host) {
		tokensMu.Lock()
		token, ok := tokens[r.URL.Host]
		tokensMu.Unlock()
		if !ok {
			token = testAPIToken
		}
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return t.base.RoundTrip(r)
}

func isLoopbackHost(hostport string) bool {
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
