package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

func adminServer(t *testing.T, allowed []string) (*httptest.Server, store.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k := kernel.New(st, kernel.Config{})
	fake := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	a, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, WebhookSecret: "hook-secret", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Config{Kernel: k, Store: st, Adapters: []chat.Adapter{a}, Allowed: map[string][]string{gh.PlatformTelegram: allowed},
		Logger: slog.New(slog.DiscardHandler)})
	srv := httpapi.New(httpapi.Config{Kernel: k, Store: st, Admin: gw, Hooks: gw.Handlers(), APIToken: "tok", MaxBodyBytes: 64 << 10, Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts, st
}

func call(t *testing.T, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const update = `{"update_id": 501, "message": {"message_id": 7, "date": 1796029897, "text": "hello", "chat": {"id": 4242, "type": "private", "first_name": "A"}, "from": {"id": 4242, "is_bot": false, "first_name": "A", "username": "ann"}}}`

func TestWebhookAndReceiveLog(t *testing.T) {
	ts, _ := adminServer(t, nil)
	auth := []string{"Authorization", "Bearer tok"}
	// The webhook proves itself with the platform's secret, not the API token.
	if code, _ := call(t, "POST", ts.URL+"/hooks/telegram", update, "Content-Type", "application/json"); code != 401 {
		t.Fatalf("webhook without its secret: %d", code)
	}
	if code, _ := call(t, "POST", ts.URL+"/hooks/telegram", update, "X-Telegram-Bot-Api-Secret-Token", "wrong"); code != 401 {
		t.Fatalf("webhook with a wrong secret: %d", code)
	}
	if code, _ := call(t, "POST", ts.URL+"/hooks/telegram", `{"update_id": 9, "message": `+strings.Repeat(" ", 70<<10)+`{}}`, "X-Telegram-Bot-Api-Secret-Token", "hook-secret"); code < 400 || code >= 500 {
		t.Fatalf("an oversize webhook body: %d", code)
	}
	if code, body := call(t, "POST", ts.URL+"/hooks/telegram", update, "X-Telegram-Bot-Api-Secret-Token", "hook-secret"); code != 200 {
		t.Fatalf("webhook: %d %s", code, body)
	}
	// The admin endpoints need the API token.
	if code, _ := call(t, "GET", ts.URL+"/v1/receive-log", ""); code != 401 {
		t.Fatalf("receive log without a token: %d", code)
	}
	code, body := call(t, "GET", ts.URL+"/v1/receive-log?platform=telegram", "", auth...)
	if code != 200 || !strings.Contains(body, `"outcome":"dropped"`) || !strings.Contains(body, `"reason":"not_allowed"`) ||
		!strings.Contains(body, "TELEGRAM_ALLOWED_USERS") || !strings.Contains(body, `"userId":"4242"`) || strings.Count(body, `"updateId"`) != 1 {
		t.Fatalf("receive log: %d %s", code, body)
	}
	if code, body := call(t, "GET", ts.URL+"/v1/receive-log?outcome=lost", "", auth...); code != 400 || !strings.Contains(body, "outcome") {
		t.Fatalf("bad outcome filter: %d %s", code, body)
	}
	if code, body := call(t, "GET", ts.URL+"/v1/receive-log?before=x", "", auth...); code != 400 {
		t.Fatalf("bad before: %d %s", code, body)
	}
	code, body = call(t, "GET", ts.URL+"/v1/adapters", "", auth...)
	if code != 200 || !strings.Contains(body, `"platform":"telegram"`) || !strings.Contains(body, `"allowed":"nobody"`) ||
		!strings.Contains(body, "TELEGRAM_ALLOWED_USERS") || !strings.Contains(body, `"webhook":true`) || !strings.Contains(body, `"reason":"not_allowed"`) {
		t.Fatalf("adapters: %d %s", code, body)
	}
	if code, body := call(t, "GET", ts.URL+"/v1/outbox?state=dead", "", auth...); code != 200 || body != `{"entries":[]}`+"\n" {
		t.Fatalf("outbox: %d %q", code, body)
	}
	if code, _ := call(t, "GET", ts.URL+"/v1/outbox?state=lost", "", auth...); code != 400 {
		t.Fatalf("bad outbox state: %d", code)
	}
	if code, _ := call(t, "GET", ts.URL+"/hooks/telegram", "", auth...); code != 404 && code != 405 {
		t.Fatalf("GET on a webhook: %d", code)
	}
}

func TestWebhookRedeliveryIsLoggedOnce(t *testing.T) {
	ts, st := adminServer(t, []string{"4242"})
	for range 3 {
		if code, body := call(t, "POST", ts.URL+"/hooks/telegram", update, "X-Telegram-Bot-Api-Secret-Token", "hook-secret"); code != 200 {
			t.Fatalf("webhook: %d %s", code, body)
		}
	}
	handed, _ := st.ListReceive(context.Background(), store.ReceiveFilter{Outcome: chat.ReceiveHandedOn, Limit: 10})
	dups, _ := st.ListReceive(context.Background(), store.ReceiveFilter{Reason: chat.ReasonDuplicate, Limit: 10})
	if len(handed) != 1 || len(dups) != 2 {
		t.Fatalf("one update delivered three times: %d handed on, %d duplicates", len(handed), len(dups))
	}
}

func TestAdminWithoutPlatforms(t *testing.T) {
	st := openSQLite(t)
	ts := httptest.NewServer(httpapi.New(httpapi.Config{Kernel: kernel.New(st, kernel.Config{}), Store: st, APIToken: testToken, Logger: slog.New(slog.DiscardHandler), NoPlatformHint: "No chat platform is configured: set TELEGRAM_BOT_TOKEN."}).Handler())
	defer ts.Close()
	// The admin page's reads answer, empty, rather than 503.
	for _, path := range []string{"/v1/receive-log", "/v1/outbox?state=dead"} {
		if code, body := call(t, "GET", ts.URL+path, ""); code != 200 || strings.TrimSpace(body) != `{"entries":[]}` {
			t.Fatalf("%s without platforms: %d %s", path, code, body)
		}
	}
	if code, body := call(t, "GET", ts.URL+"/v1/admin/stats", ""); code != 200 || !strings.Contains(body, `"buckets"`) {
		t.Fatalf("stats without platforms: %d %s", code, body)
	}
	if code, body := call(t, "GET", ts.URL+"/v1/adapters", ""); code != 200 || !strings.Contains(body, "TELEGRAM_BOT_TOKEN") {
		t.Fatalf("adapters without platforms: %d %s", code, body)
	}
	if code, _ := call(t, "POST", ts.URL+"/hooks/telegram", update); code != 404 {
		t.Fatalf("a webhook of an unconfigured platform: %d", code)
	}
}

func openSQLite(t *testing.T) store.Store {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// POST /v1/adapters/{platform}/check walks the Test behind the API token:
// here the token is accepted by the fake, and nobody holds the lease (the
// gateway is not started), which is the failing step.
func TestAdapterCheck(t *testing.T) {
	ts, _ := adminServer(t, nil)
	auth := []string{"Authorization", "Bearer tok"}
	if code, _ := call(t, "POST", ts.URL+"/v1/adapters/telegram/check", ""); code != 401 {
		t.Fatalf("the Test without a token: %d", code)
	}
	code, body := call(t, "POST", ts.URL+"/v1/adapters/telegram/check", "", auth...)
	var res gateway.CheckResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != 200 {
		t.Fatalf("the Test: %d %s %v", code, body, err)
	}
	if res.OK || res.Failed != gateway.StepLease || len(res.Steps) != 5 || res.Steps[0].Name != gateway.StepToken || res.Steps[0].Result != gateway.CheckPass ||
		res.Steps[1].Fix == "" {
		t.Fatalf("the Test of a gateway that holds no lease: %s", body)
	}
	if code, body := call(t, "POST", ts.URL+"/v1/adapters/irc/check", "", auth...); code != 404 || !strings.Contains(body, `"not-found"`) {
		t.Fatalf("the Test of an unknown platform: %d %s", code, body)
	}
	if code, _ := call(t, "GET", ts.URL+"/v1/adapters/telegram/check", "", auth...); code != 405 {
		t.Fatalf("GET on the Test: %d", code)
	}
}

// /readyz lists the platforms' states — a refused token here, retrying —
// and stays ready: a chat outage must not take the replica out of a load
// balancer.
func TestReadyzShowsARetryingPlatformAndStaysReady(t *testing.T) {
	st := openSQLite(t)
	k := kernel.New(st, kernel.Config{})
	fake := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	a, err := telegram.New(telegram.Config{Token: "987654321:AAWrongTokenForThisBot_0123456789abcdef", APIURL: fake.URL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Config{Kernel: k, Store: st, Adapters: []chat.Adapter{a}, Logger: slog.New(slog.DiscardHandler)})
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop(context.Background()) })
	ts := httptest.NewServer(httpapi.New(httpapi.Config{Kernel: k, Store: st, Ready: []httpapi.Pinger{st}, Admin: gw, APIToken: "tok", Logger: slog.New(slog.DiscardHandler)}).Handler())
	t.Cleanup(ts.Close)
	var last string
	testenv.Eventually(t, "readyz to show telegram retrying", func() bool {
		code, body := call(t, "GET", ts.URL+"/readyz", "")
		last = body
		var r struct {
			Status    string
			Platforms []struct{ Platform, State, LastError string }
		}
		if code != 200 || json.Unmarshal([]byte(body), &r) != nil || r.Status != "ready" {
			t.Fatalf("readyz: %d %s", code, body)
		}
		return len(r.Platforms) == 1 && r.Platforms[0].Platform == "telegram" && r.Platforms[0].State == gateway.StateRetrying &&
			strings.Contains(r.Platforms[0].LastError, "refused the token")
	})
	t.Log(last)
}
