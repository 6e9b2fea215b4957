package main

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// noToken clears the token TestMain gives every gateway: the gateway then
// generates its own, as on a fresh machine.
const noToken = "GATEHOUSE_API_TOKEN="

// loginLink finds the login link the start log prints for base.
func loginLink(t *testing.T, log, base string) string {
	t.Helper()
	m := regexp.MustCompile(`login=(\S+)`).FindAllStringSubmatch(log, -1)
	if len(m) == 0 {
		t.Fatalf("no login link in the start log:\n%s", log)
	}
	link := strings.Trim(m[len(m)-1][1], `"`)
	if !strings.HasPrefix(link, base+"/login?token=") {
		t.Fatalf("login link %q is not on %s", link, base)
	}
	return link
}

// tokenOfLink is the token a login link carries.
func tokenOfLink(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("login link %q: %v", link, err)
	}
	return u.Query().Get("token")
}

// tokenFile reads <data>/api-token and checks it is the owner's alone.
func tokenFile(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(data, "api-token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the data directory has no api-token: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("api-token has mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// bare sends a request with exactly the headers given (no token).
func bare(t *testing.T, method, url string, body io.Reader, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := bareClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// concrete fills a route pattern's wildcards.
func concrete(path string) string {
	return strings.NewReplacer("{id}", "x1", "{platform}", "telegram", "{user}", "u1").Replace(path)
}

// Every route the router is built from, walked through the real binary:
// no credential and a wrong one get 401 unauthorized on each but the open
// ones (probes, login, pages, webhooks); the generated token opens them.
// A route added to the tables is walked too, so it cannot be left open.
func TestEveryV1RouteNeedsACredential(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, noToken, "GATEHOUSE_DATA_DIR="+data)
	base := "http://" + p.addr
	token := tokenFile(t, data)
	if len(token) < 22 { // 128 bits in base64
		t.Fatalf("generated token %q is shorter than 128 bits", token)
	}
	walked := 0
	for _, rt := range httpapi.Routes() {
		methods := []string{rt.Method}
		if rt.Method == "" {
			methods = []string{"GET", "POST"}
		}
		for _, m := range methods {
			u := base + concrete(rt.Path)
			if rt.Open {
				continue
			}
			walked++
			for _, creds := range [][]string{nil, {"Authorization", "Bearer wrong-" + token}, {"Authorization", "Basic " + token},
				{"Cookie", "gatehouse_session=forged"}} {
				status, body := bare(t, m, u, strings.NewReader(`{}`), creds...)
				// The OpenAI endpoint answers in OpenAI's error shape.
				if status != http.StatusUnauthorized || !(strings.Contains(body, `"unauthorized"`) || strings.Contains(body, `"invalid_api_key"`)) {
					t.Errorf("%s %s with %v: %d %s, want 401 unauthorized", m, rt.Path, creds, status, body)
				}
			}
			status, body := bare(t, m, u, strings.NewReader(`{}`), "Authorization", "Bearer "+token)
			if status == http.StatusUnauthorized {
				t.Errorf("%s %s with the generated token: 401 %s", m, rt.Path, body)
			}
		}
	}
	if walked < 30 {
		t.Fatalf("walked only %d routes", walked)
	}
	// The probes stay open: the guard and load balancers hold no token.
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if status, body := bare(t, "GET", base+path, nil); status != 200 {
			t.Errorf("%s without a token: %d %s", path, status, body)
		}
	}
}

// The token generated at the first start is kept: a restart on the same
// data serves the same one, `gatehouse token` prints it, and its login
// link gives a browser an HttpOnly, SameSite=Strict cookie that opens
// /v1 — with writes from another origin refused.
func TestGeneratedTokenSurvivesARestartAndLogsIn(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, noToken, "GATEHOUSE_DATA_DIR="+data)
	first := tokenFile(t, data)
	base := "http://" + p.addr
	waitUntil(t, "the login link logged", func() bool { return strings.Contains(p.out.String(), "login=") })
	link := loginLink(t, p.out.String(), base)
	if tokenOfLink(t, link) != first {
		t.Fatalf("the login link's token is not the one in the data directory")
	}
	printed := runCLI(t, data, "token")
	if printed != first {
		t.Fatalf("gatehouse token printed %q, the data directory holds %q", printed, first)
	}
	if got := runCLI(t, data, "token", "--url"); !strings.HasSuffix(got, "/login?token="+url.QueryEscape(first)) {
		t.Fatalf("gatehouse token --url printed %q", got)
	}

	// The login link: 303 to /, a session cookie, no token in it.
	noRedirect := &http.Client{Transport: bareClient.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "gatehouse_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || strings.Contains(cookie.Value, first) {
		t.Fatalf("session cookie %+v", cookie)
	}
	if resp, err := noRedirect.Get(base + "/login?token=wrong"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong login link: %v %v", resp, err)
	}
	if resp, err := noRedirect.Get(base + "/login?token=" + url.QueryEscape(first) + "&next=//evil.test/"); err != nil || resp.Header.Get("Location") != "/" {
		t.Fatalf("login redirect to another host: %v %v", resp.Header.Get("Location"), err)
	}
	sess := "gatehouse_session=" + cookie.Value
	if status, body := bare(t, "GET", base+"/v1/info", nil, "Cookie", sess); status != 200 {
		t.Fatalf("GET /v1/info with the cookie: %d %s", status, body)
	}
	if status, body := bare(t, "POST", base+"/v1/sessions/web_c1/input", strings.NewReader(`{"text":"hi","requestId":"r1"}`),
		"Cookie", sess, "Origin", "http://evil.test", "Content-Type", "application/json"); status != 401 {
		t.Fatalf("a cross-origin write with the cookie: %d %s", status, body)
	}
	if status, body := bare(t, "POST", base+"/v1/sessions/web_c1/input", strings.NewReader(`{"text":"hi","requestId":"r1"}`),
		"Cookie", sess, "Origin", base, "Sec-Fetch-Site", "same-origin", "Content-Type", "application/json"); status >= 300 {
		t.Fatalf("a same-origin write with the cookie: %d %s", status, body)
	}
	// /metrics on the main listener needs the token too.
	if status, _ := bare(t, "GET", base+"/metrics", nil); status != 401 {
		t.Fatalf("/metrics without a token: %d", status)
	}
	if status, _ := bare(t, "GET", base+"/metrics", nil, "Authorization", "Bearer "+first); status != 200 {
		t.Fatalf("/metrics with the token: %d", status)
	}

	p.stopWith(t, 15)
	q := start(t, noToken, "GATEHOUSE_DATA_DIR="+data)
	if again := tokenFile(t, data); again != first {
		t.Fatalf("after a restart the token is %q, before it was %q", again, first)
	}
	if status, body := bare(t, "GET", "http://"+q.addr+"/v1/sessions", nil, "Authorization", "Bearer "+first); status != 200 {
		t.Fatalf("the kept token after a restart: %d %s", status, body)
	}
	if status, body := bare(t, "GET", "http://"+q.addr+"/v1/info", nil, "Cookie", sess); status != 200 {
		t.Fatalf("the session cookie after a restart: %d %s", status, body)
	}
}

// Two replicas on one Postgres with no token set serve the one the first
// generated: each writes it to its own data directory, and each accepts it.
func TestReplicasShareTheGeneratedToken(t *testing.T) {
	url := testenv.PostgresURL(t)
	dataA, dataB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a := start(t, noToken, "GATEHOUSE_DATA_DIR="+dataA, "GATEHOUSE_DATABASE_URL="+url)
	b := start(t, noToken, "GATEHOUSE_DATA_DIR="+dataB, "GATEHOUSE_DATABASE_URL="+url)
	ta, tb := tokenFile(t, dataA), tokenFile(t, dataB)
	if ta != tb {
		t.Fatalf("replicas serve different tokens: %q and %q", ta, tb)
	}
	for _, p := range []*proc{a, b} {
		if status, body := bare(t, "GET", "http://"+p.addr+"/v1/info", nil, "Authorization", "Bearer "+ta); status != 200 {
			t.Fatalf("replica %s with the shared token: %d %s", p.addr, status, body)
		}
		if status, _ := bare(t, "GET", "http://"+p.addr+"/v1/info", nil); status != 401 {
			t.Fatalf("replica %s without a token: %d", p.addr, status)
		}
	}
	if printed := runCLIEnv(t, []string{"GATEHOUSE_DATA_DIR=" + t.TempDir(), "GATEHOUSE_DATABASE_URL=" + url}, "token"); printed != ta {
		t.Fatalf("gatehouse token on the shared database printed %q, want %q", printed, ta)
	}
}

// runCLI runs the binary with the test's data directory and no token set.
func runCLI(t *testing.T, data string, args ...string) string {
	t.Helper()
	return runCLIEnv(t, []string{"GATEHOUSE_DATA_DIR=" + data}, args...)
}

func runCLIEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(append(os.Environ(), noToken), env...)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("gatehouse %v: %v\n%s", args, err, stderr)
	}
	return strings.TrimSpace(string(out))
}
