package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
)

// raw posts body to method and returns the status and the body as sent.
func raw(t *testing.T, f *telegramtest.TelegramFake, token, method, contentType, body string) (int, string, error) {
	t.Helper()
	resp, err := http.Post(f.URL+"/bot"+token+"/"+method, contentType, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// A wrong or revoked token and a JSON body that does not parse are
// answered byte for byte as Telegram answers them.
func TestTelegramFakeRefusalsAreTelegramsWords(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	const unauthorized = `{"ok":false,"error_code":401,"description":"Unauthorized"}`
	if code, body, err := raw(t, f, "1:wrong", "getMe", "application/json", "{}"); err != nil || code != 401 || body != unauthorized {
		t.Fatalf("wrong token: %d %s %v", code, body, err)
	}
	f.RevokeToken()
	if code, body, _ := raw(t, f, f.Token, "getUpdates", "application/json", "{}"); code != 401 || body != unauthorized {
		t.Fatalf("revoked token: %d %s", code, body)
	}
	f.RestoreToken()
	if code, body, _ := raw(t, f, f.Token, "getMe", "application/json", ""); code != 200 || !strings.HasPrefix(body, `{"ok":true,"result":{`) {
		t.Fatalf("restored token: %d %s", code, body)
	}
	for _, bad := range []string{"{", `{"chat_id":1,`, "[1,2]", "nope"} {
		code, body, _ := raw(t, f, f.Token, "sendMessage", "application/json", bad)
		if want := `{"ok":false,"error_code":400,"description":"Bad Request: can't parse JSON object"}`; code != 400 || body != want {
			t.Errorf("body %q: %d %s, want 400 %s", bad, code, body, want)
		}
	}
	if n := f.Calls("getme"); n != 2 {
		t.Fatalf("Calls(getme) = %d, want 2", n)
	}
}

// FailAll fails every call, as a proxy's 502 page or a closed
// connection, until FailAll(0); Calls still counts them.
func TestTelegramFakeFailAll(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	f.FailAll(http.StatusBadGateway)
	code, body, err := raw(t, f, f.Token, "getMe", "application/json", "")
	if err != nil || code != 502 || !strings.Contains(body, "<title>502 Bad Gateway</title>") {
		t.Fatalf("FailAll(502): %d %q %v", code, body, err)
	}
	f.FailAll(telegramtest.FailConnection)
	if _, _, err := raw(t, f, f.Token, "getMe", "application/json", ""); err == nil {
		t.Fatal("FailAll(FailConnection): answered")
	}
	f.FailAll(0)
	if code, _ := call(t, f, f.Token, "getMe", nil); code != 200 {
		t.Fatalf("after FailAll(0): %d", code)
	}
	if n := f.Calls("getMe"); n != 3 {
		t.Fatalf("Calls(getMe) = %d, want 3", n)
	}
	if errs := f.Errors(); len(errs) != 0 {
		t.Fatalf("failures listed as refusals: %q", errs)
	}
}

// With EmptyPollsAtOnce a poll with nothing to return is answered at
// once, not held for its timeout; an update waiting is returned as usual.
func TestTelegramFakeEmptyPollsAtOnce(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{EmptyPollsAtOnce: true})
	// A held poll would outlast the context: the poll's timeout is far
	// beyond it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"timeout": 60})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.URL+"/bot"+f.Token+"/getUpdates", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("an empty poll was held: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"ok":true,"result":[]}` {
		t.Fatalf("empty poll: %s", b)
	}
	up := f.Say("alice", "alice", "hi", false)
	_, r := call(t, f, f.Token, "getUpdates", map[string]any{"timeout": 60})
	if ids := updateIDs(t, r); len(ids) != 1 || ids[0] != up {
		t.Fatalf("getUpdates: %v, want [%s]", ids, up)
	}
}

// getWebhookInfo says where updates go, how many wait, and the last
// delivery that failed; DeleteWebhook and SetWebhook change it from
// outside, as another program with the token can.
func TestTelegramFakeWebhookInfo(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{Webhook: true})
	info := func() map[string]any {
		t.Helper()
		_, r := call(t, f, f.Token, "getWebhookInfo", nil)
		var m map[string]any
		if err := json.Unmarshal(r.Result, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := info(); m["url"] != "" || m["pending_update_count"] != 0.0 || m["last_error_date"] != nil {
		t.Fatalf("no webhook: %v", m)
	}
	// Nothing listens here: the delivery fails.
	dead := httptestClosedURL(t)
	if code, _ := call(t, f, f.Token, "setWebhook", map[string]any{"url": dead}); code != 200 {
		t.Fatal("setWebhook refused")
	}
	f.Say("alice", "alice", "hi", false)
	var m map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for m = info(); m["last_error_date"] == nil; m = info() {
		if time.Now().After(deadline) {
			t.Fatalf("no delivery error: %v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m["url"] != dead || m["pending_update_count"] != 1.0 || m["last_error_message"] != "Connection refused" {
		t.Fatalf("failing webhook: %v", m)
	}
	f.DeleteWebhook()
	if m := info(); m["url"] != "" || f.WebhookURL() != "" {
		t.Fatalf("after DeleteWebhook: %v", m)
	}
}

// httptestClosedURL is a loopback URL where nothing listens any more.
func httptestClosedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL + "/hook"
}
