package discordtest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// FailAll answers REST with a proxy's 502 and refuses gateway sockets,
// counting both, and lists neither as a refusal; FailAll(false) recovers.
func TestDiscordFakeFailAll(t *testing.T) {
	f := NewDiscord(t)
	auth := "Bot " + f.Token()
	f.FailAll(true)
	if status, _ := discordCall(t, f, "GET", "/users/@me", auth, nil); status != http.StatusBadGateway {
		t.Fatalf("GET /users/@me while failing: %d, want 502", status)
	}
	_, resp, err := websocket.DefaultDialer.Dial(f.wsURL()+"/?v=9&encoding=json", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("gateway socket while failing: %v (%v), want a refused upgrade with 502", err, resp)
	}
	if n := f.Calls("GET users/@me"); n != 1 {
		t.Fatalf("Calls(GET users/@me) = %d, want 1", n)
	}
	if n := f.Sockets(); n != 1 {
		t.Fatalf("Sockets() = %d, want 1", n)
	}
	if errs := f.Errors(); len(errs) != 0 {
		t.Fatalf("failures listed as refusals: %q", errs)
	}
	f.FailAll(false)
	if status, _ := discordCall(t, f, "GET", "/users/@me", auth, nil); status != http.StatusOK {
		t.Fatalf("GET /users/@me after recovery: %d", status)
	}
	discordDialGateway(t, f).identify(f.Token(), discordAllIntents)
}

// FailSockets closes a socket right after the upgrade, before HELLO,
// while REST answers.
func TestDiscordFakeFailSockets(t *testing.T) {
	f := NewDiscord(t)
	f.FailSockets(true)
	ws, _, err := websocket.DefaultDialer.Dial(f.wsURL()+"/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil {
		t.Fatal("a socket while FailSockets got a frame")
	}
	if status, _ := discordCall(t, f, "GET", "/users/@me", "Bot "+f.Token(), nil); status != http.StatusOK {
		t.Fatalf("REST while only sockets fail: %d", status)
	}
}

// A revoked token gets Discord's 401 on REST and 4004 on IDENTIFY; an
// identified socket is closed with 4004; RestoreToken accepts it again.
func TestDiscordFakeRevokeToken(t *testing.T) {
	f := NewDiscord(t)
	auth := "Bot " + f.Token()
	open := discordDialGateway(t, f)
	open.identify(f.Token(), discordAllIntents)
	open.next("READY")

	f.RevokeToken()
	closeCode := func(c *discordTestClient) int {
		t.Helper()
		_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			_, _, err := c.ws.ReadMessage()
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			if err != nil {
				t.Fatalf("socket ended without a close frame: %v", err)
			}
		}
	}
	if code := closeCode(open); code != 4004 {
		t.Fatalf("the open socket closed with %d, want 4004", code)
	}
	if status, _ := discordCall(t, f, "GET", "/users/@me", auth, nil); status != http.StatusUnauthorized {
		t.Fatalf("GET /users/@me with a revoked token: %d, want 401", status)
	}
	c := discordDialGateway(t, f)
	c.identify(f.Token(), discordAllIntents)
	if code := closeCode(c); code != 4004 {
		t.Fatalf("IDENTIFY with a revoked token closed with %d, want 4004", code)
	}

	f.RestoreToken()
	if status, _ := discordCall(t, f, "GET", "/users/@me", auth, nil); status != http.StatusOK {
		t.Fatalf("GET /users/@me after RestoreToken: %d", status)
	}
	c = discordDialGateway(t, f)
	c.identify(f.Token(), discordAllIntents)
	c.next("READY")
}
