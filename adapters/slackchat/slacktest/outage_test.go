package slacktest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
)

// openSocket asks apps.connections.open for a socket URL (with the
// status it answered) and dials it when it got one.
func openSocket(t *testing.T, f *slacktest.SlackFake) (int, *websocket.Conn) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/apps.connections.open", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.AppToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var open slackAnswer
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&open) != nil || !open.OK {
		return resp.StatusCode, nil
	}
	ws, _, err := websocket.DefaultDialer.Dial(open.URL, http.Header{"Origin": {"https://api.slack.com"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return resp.StatusCode, ws
}

func TestSlackFakeFailsEveryCallAndRecovers(t *testing.T) {
	f := slacktest.NewSlack(t)
	_, ws := openSocket(t, f)
	f.FailCalls(http.StatusNotFound)
	// The open socket is closed: after hello, the read fails.
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			break
		}
	}
	good := url.Values{"token": {f.BotToken}}
	for _, method := range []string{"auth.test", "chat.postMessage"} {
		resp, err := http.PostForm(f.URL+"/api/"+method, good)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s answered %d while failing, want 404", method, resp.StatusCode)
		}
	}
	if status, _ := openSocket(t, f); status != http.StatusNotFound {
		t.Errorf("apps.connections.open answered %d while failing", status)
	}
	f.FailCalls(0)
	if status, a := slackCall(t, f, "auth.test", good); status != http.StatusOK || !a.OK {
		t.Errorf("auth.test after recovery: %d %+v", status, a)
	}
	if n := len(f.Calls("auth.test")); n != 2 {
		t.Errorf("%d auth.test calls logged, want 2", n)
	}
	if errs := f.Errors(); len(errs) > 0 {
		t.Errorf("failures listed as refusals: %q", errs)
	}
}

func TestSlackFakeFailsOneMethod(t *testing.T) {
	f := slacktest.NewSlack(t)
	f.FailMethod("apps.connections.open", http.StatusServiceUnavailable)
	if status, ws := openSocket(t, f); status != http.StatusServiceUnavailable || ws != nil {
		t.Errorf("apps.connections.open answered %d", status)
	}
	if status, a := slackCall(t, f, "auth.test", url.Values{"token": {f.BotToken}}); status != http.StatusOK || !a.OK {
		t.Errorf("auth.test failed with another method: %d %+v", status, a)
	}
	f.FailMethod("apps.connections.open", 0)
	if status, ws := openSocket(t, f); status != http.StatusOK || ws == nil {
		t.Errorf("apps.connections.open after recovery: %d", status)
	}
}

func TestSlackFakeDropsSocketsAfterHello(t *testing.T) {
	f := slacktest.NewSlack(t)
	f.DropSockets(true)
	_, ws := openSocket(t, f)
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hello struct{ Type string }
	if err := ws.ReadJSON(&hello); err != nil || hello.Type != "hello" {
		t.Fatalf("first message %+v, %v; want hello", hello, err)
	}
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("the socket stayed open")
	}
	f.DropSockets(false)
	_, ws = openSocket(t, f)
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := ws.ReadJSON(&hello); err != nil {
		t.Fatal(err)
	}
	f.Say("room", "alice", "still here", false)
	var env struct{ Type string }
	if err := ws.ReadJSON(&env); err != nil || env.Type != "events_api" {
		t.Fatalf("after DropSockets(false): %+v, %v; want the event", env, err)
	}
	if n := len(f.SocketDials()); n != 2 {
		t.Errorf("%d socket dials logged, want 2", n)
	}
}
