package discordtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// These tests hold the Discord fake to Discord's rules with raw HTTP
// and a raw websocket, so that the adapter's tests can trust it.

type discordFrame struct {
	Op int             `json:"op"`
	T  string          `json:"t"`
	S  int64           `json:"s"`
	D  json.RawMessage `json:"d"`
}

// discordTestClient is a bare gateway client.
type discordTestClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func discordDialGateway(t *testing.T, f *DiscordFake) *discordTestClient {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(f.wsURL()+"/?v=9&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	c := &discordTestClient{t: t, ws: ws}
	if hello := c.read(); hello.Op != 10 {
		t.Fatalf("first frame is op %d, want HELLO (10)", hello.Op)
	}
	return c
}

func (c *discordTestClient) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *discordTestClient) read() discordFrame {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var fr discordFrame
	if err := c.ws.ReadJSON(&fr); err != nil {
		c.t.Fatalf("reading the gateway: %v", err)
	}
	return fr
}

// next reads until a dispatch of type typ.
func (c *discordTestClient) next(typ string) discordFrame {
	c.t.Helper()
	for {
		if fr := c.read(); fr.Op == 0 && fr.T == typ {
			return fr
		}
	}
}

func (c *discordTestClient) identify(token string, intents int) {
	c.send(map[string]any{"op": 2, "d": map[string]any{
		"token": token, "intents": intents,
		"properties": map[string]string{"os": "linux", "browser": "test", "device": "test"},
	}})
}

const discordAllIntents = wire.IntentGuildMessages | wire.IntentDirectMessages | wire.IntentMessageContent

func discordCall(t *testing.T, f *DiscordFake, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	if body != nil {
		_ = json.NewEncoder(&buf).Encode(body)
	}
	req, _ := http.NewRequest(method, f.URL()+"/api/v9"+path, &buf)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestDiscordFakeGateway(t *testing.T) {
	f := NewDiscord(t)

	bad := discordDialGateway(t, f)
	bad.identify("Bot wrong", discordAllIntents)
	_, _, err := bad.ws.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4004 {
		t.Errorf("IDENTIFY with a wrong token: %v, want close 4004", err)
	}

	// Said before any client: held until READY.
	early := f.Say("room", "alice", "early", false)
	c := discordDialGateway(t, f)
	c.identify("Bot "+f.Token(), wire.IntentGuildMessages|wire.IntentDirectMessages) // no content intent
	ready := c.next("READY")
	var r struct {
		SessionID string `json:"session_id"`
		User      struct {
			ID  string `json:"id"`
			Bot bool   `json:"bot"`
		} `json:"user"`
	}
	_ = json.Unmarshal(ready.D, &r)
	if r.User.ID != f.BotID() || !r.User.Bot || r.SessionID == "" || ready.S != 1 {
		t.Errorf("READY = %s (s=%d)", ready.D, ready.S)
	}
	msg := c.next("MESSAGE_CREATE")
	var m struct{ ID, Content string }
	_ = json.Unmarshal(msg.D, &m)
	if m.ID != early || m.Content != "" {
		t.Errorf("guild message without the content intent = %s, want the held message with its content blanked", msg.D)
	}
	if f.Acked(early) {
		t.Error("Acked before any heartbeat")
	}
	c.send(map[string]any{"op": 1, "d": msg.S})
	if fr := c.read(); fr.Op != 11 {
		t.Errorf("heartbeat answered with op %d, want 11", fr.Op)
	}
	if !f.Acked(early) {
		t.Error("not Acked after a heartbeat covering the event")
	}

	dm := f.Say("dm-bob", "bob", "secret", false)
	fr := c.next("MESSAGE_CREATE")
	_ = json.Unmarshal(fr.D, &m)
	if m.ID != dm || m.Content != "secret" {
		t.Errorf("DM = %s, want its content (DMs need no content intent)", fr.D)
	}

	// Drop, say, resume from the last read sequence: the missed event
	// comes, the read one does not.
	_ = c.ws.Close()
	testenv.Eventually(t, "the fake to see the socket closed", func() bool { return !f.Connected() })
	missed := f.Say("room", "alice", "missed", false)
	c2 := discordDialGateway(t, f)
	c2.send(map[string]any{"op": 6, "d": map[string]any{"token": "Bot " + f.Token(), "session_id": r.SessionID, "seq": fr.S}})
	got := c2.next("MESSAGE_CREATE")
	_ = json.Unmarshal(got.D, &m)
	if m.ID != missed {
		t.Errorf("resume replayed %s, want only the missed message %s", m.ID, missed)
	}
	c2.next("RESUMED")

	// Redeliver repeats the message id with a new sequence number.
	f.Redeliver(missed)
	again := c2.next("MESSAGE_CREATE")
	_ = json.Unmarshal(again.D, &m)
	if m.ID != missed || again.S <= got.S {
		t.Errorf("redelivery = %s s=%d, want message %s after s=%d", again.D, again.S, missed, got.S)
	}
	if errs := f.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "wrong token") {
		t.Errorf("errors = %q, want just the wrong token", errs)
	}
}

func discordButtons(n int, customID func(i int) string, label string) []any {
	var bs []any
	for i := range n {
		bs = append(bs, map[string]any{"type": 2, "style": 1, "label": label, "custom_id": customID(i)})
	}
	return []any{map[string]any{"type": 1, "components": bs}}
}

func TestDiscordFakeRESTIsStrict(t *testing.T) {
	f := NewDiscord(t)
	room := f.ChannelID("room")
	userMsg := f.Say("room", "alice", "hi", false)
	auth := "Bot " + f.Token()
	id := func(i int) string { return "b" + string(rune('0'+i)) }
	cases := []struct {
		name, method, path, token string
		body                      any
		status, code              int
	}{
		{"wrong token", "POST", "/channels/" + room + "/messages", "Bot nope", map[string]any{"content": "x"}, 401, 0},
		{"no Bot prefix", "POST", "/channels/" + room + "/messages", f.Token(), map[string]any{"content": "x"}, 401, 0},
		{"too long", "POST", "/channels/" + room + "/messages", auth, map[string]any{"content": strings.Repeat("é", 2001)}, 400, 50035},
		{"empty", "POST", "/channels/" + room + "/messages", auth, map[string]any{"content": ""}, 400, 50006},
		{"unknown channel", "POST", "/channels/123/messages", auth, map[string]any{"content": "x"}, 404, 10003},
		{"custom_id too long", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "components": discordButtons(1, func(int) string { return strings.Repeat("a", 101) }, "ok")}, 400, 50035},
		{"label too long", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "components": discordButtons(1, id, strings.Repeat("l", 81))}, 400, 50035},
		{"six buttons in a row", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "components": discordButtons(6, id, "ok")}, 400, 50035},
		{"duplicate custom_id", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "components": discordButtons(2, func(int) string { return "same" }, "ok")}, 400, 50035},
		{"button outside a row", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "components": []any{map[string]any{"type": 2, "style": 1, "label": "a", "custom_id": "a"}}}, 400, 50035},
		{"reply to a missing message", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "message_reference": map[string]any{"message_id": "42"}}, 400, 50035},
		{"bad allowed_mentions", "POST", "/channels/" + room + "/messages", auth,
			map[string]any{"content": "x", "allowed_mentions": map[string]any{"parse": []string{"all"}}}, 400, 50035},
		{"edit unknown message", "PATCH", "/channels/" + room + "/messages/42", auth, map[string]any{"content": "x"}, 404, 10008},
		{"edit someone else's message", "PATCH", "/channels/" + room + "/messages/" + userMsg, auth, map[string]any{"content": "x"}, 403, 50005},
		{"unknown route", "GET", "/guilds/1/members", auth, nil, 404, 0},
	}
	for _, tc := range cases {
		before := len(f.Errors())
		status, body := discordCall(t, f, tc.method, tc.path, tc.token, tc.body)
		code, _ := body["code"].(float64)
		if status != tc.status || int(code) != tc.code {
			t.Errorf("%s: %d %v, want %d code %d", tc.name, status, body, tc.status, tc.code)
		}
		if len(f.Errors()) != before+1 {
			t.Errorf("%s: refusal not recorded in Errors()", tc.name)
		}
	}

	// What Discord accepts, the fake accepts.
	status, body := discordCall(t, f, "POST", "/channels/"+room+"/messages", auth, map[string]any{
		"content": "card", "allowed_mentions": map[string]any{"parse": []string{}},
		"components":        discordButtons(5, id, strings.Repeat("l", 80)),
		"message_reference": map[string]any{"message_id": "42", "fail_if_not_exists": false},
	})
	if status != 200 || body["id"] == nil {
		t.Fatalf("valid card: %d %v", status, body)
	}
	msgID := body["id"].(string)
	status, _ = discordCall(t, f, "PATCH", "/channels/"+room+"/messages/"+msgID, auth, map[string]any{"content": "done", "components": []any{}})
	if status != 200 {
		t.Errorf("edit: %d", status)
	}
	if ms := f.Messages("room"); len(ms) != 1 || ms[0].Text != "done" || len(ms[0].Buttons) != 0 || !ms[0].Edited {
		t.Errorf("after the edit the room holds %+v", ms)
	}
	status, _ = discordCall(t, f, "PATCH", "/channels/"+room+"/messages/"+msgID, auth, map[string]any{"content": ""})
	if status != 400 {
		t.Errorf("edit to an empty message: %d, want 400", status)
	}
}

func TestDiscordFakeRateLimits(t *testing.T) {
	f := NewDiscord(t, DiscordRateLimits(2, time.Minute, 0))
	room := f.ChannelID("room")
	auth := "Bot " + f.Token()
	for i := range 2 {
		if status, _ := discordCall(t, f, "POST", "/channels/"+room+"/messages", auth, map[string]any{"content": "x"}); status != 200 {
			t.Fatalf("send %d: %d", i, status)
		}
	}
	status, body := discordCall(t, f, "POST", "/channels/"+room+"/messages", auth, map[string]any{"content": "x"})
	if ra, _ := body["retry_after"].(float64); status != 429 || ra <= 0 || ra > 60 || body["global"] != false {
		t.Errorf("third send in a bucket of 2: %d %v, want 429 with retry_after", status, body)
	}
	if f.RateLimited() != 1 || len(f.Errors()) != 0 {
		t.Errorf("rate limited %d, errors %q", f.RateLimited(), f.Errors())
	}
}

func TestDiscordFakeInteractions(t *testing.T) {
	f := NewDiscord(t, DiscordInteractionDeadline(300*time.Millisecond))
	c := discordDialGateway(t, f)
	c.identify("Bot "+f.Token(), discordAllIntents)
	c.next("READY")
	room := f.ChannelID("room")
	auth := "Bot " + f.Token()
	_, body := discordCall(t, f, "POST", "/channels/"+room+"/messages", auth, map[string]any{
		"content": "card", "components": discordButtons(2, func(i int) string { return []string{"yes", "no"}[i] }, "b"),
	})
	msgID := body["id"].(string)

	if _, err := f.Press("room", msgID, "maybe", "alice"); err == nil {
		t.Error("pressed a button the message never had")
	}

	type result struct {
		reply string
		err   error
	}
	press := func(data string) chan result {
		ch := make(chan result, 1)
		go func() {
			r, err := f.Press("room", msgID, data, "alice")
			ch <- result{r, err}
		}()
		return ch
	}
	interaction := func() (id, token string) {
		fr := c.next("INTERACTION_CREATE")
		var ix struct{ ID, Token string }
		_ = json.Unmarshal(fr.D, &ix)
		return ix.ID, ix.Token
	}

	done := press("yes")
	ixID, tok := interaction()
	cb := "/interactions/" + ixID + "/" + tok + "/callback"
	if status, _ := discordCall(t, f, "POST", "/interactions/"+ixID+"/wrong/callback", "", map[string]any{"type": 4, "data": map[string]any{"content": "x"}}); status != 404 {
		t.Errorf("callback with a wrong token: %d, want 404", status)
	}
	if status, _ := discordCall(t, f, "POST", cb, "", map[string]any{"type": 4, "data": map[string]any{"content": "Approved.", "flags": 64}}); status != 204 {
		t.Errorf("callback: %d, want 204", status)
	}
	if r := <-done; r.err != nil || r.reply != "Approved." {
		t.Errorf("Press = %q, %v", r.reply, r.err)
	}
	status, body := discordCall(t, f, "POST", cb, "", map[string]any{"type": 4, "data": map[string]any{"content": "again"}})
	if code, _ := body["code"].(float64); status != 400 || code != 40060 {
		t.Errorf("second answer: %d %v, want 400 code 40060", status, body)
	}

	// Type 7 updates the message.
	done = press("no")
	ixID, tok = interaction()
	discordCall(t, f, "POST", "/interactions/"+ixID+"/"+tok+"/callback", "", map[string]any{"type": 7, "data": map[string]any{"content": "Denied.", "components": []any{}}})
	if r := <-done; r.reply != "Denied." {
		t.Errorf("type 7 Press = %q, %v", r.reply, r.err)
	}
	if ms := f.Messages("room"); ms[0].Text != "Denied." || len(ms[0].Buttons) != 0 {
		t.Errorf("type 7 left the message as %+v", ms[0])
	}

	// Too late: refused, and the press fails.
	_, body = discordCall(t, f, "POST", "/channels/"+room+"/messages", auth, map[string]any{
		"content": "card", "components": discordButtons(1, func(int) string { return "late" }, "b"),
	})
	msgID = body["id"].(string)
	done = press("late")
	ixID, tok = interaction()
	if r := <-done; r.err == nil {
		t.Error("Press of an unanswered interaction succeeded")
	}
	status, body = discordCall(t, f, "POST", "/interactions/"+ixID+"/"+tok+"/callback", "", map[string]any{"type": 4, "data": map[string]any{"content": "late"}})
	if code, _ := body["code"].(float64); status != 404 || code != 10062 {
		t.Errorf("late answer: %d %v, want 404 code 10062", status, body)
	}
	errs := strings.Join(f.Errors(), "\n")
	for _, want := range []string{"wrong token", "answered twice", "not answered within", "over the"} {
		if !strings.Contains(errs, want) {
			t.Errorf("Errors() lacks %q:\n%s", want, errs)
		}
	}
}

// A modal (response type 9) is checked as Discord checks it; submitting
// it is a MODAL_SUBMIT interaction (type 5) carrying the card's message
// and the values typed, answerable with an update of that message.
func TestDiscordFakeModals(t *testing.T) {
	f := NewDiscord(t)
	c := discordDialGateway(t, f)
	c.identify("Bot "+f.Token(), discordAllIntents)
	c.next("READY")
	room := f.ChannelID("room")
	_, body := discordCall(t, f, "POST", "/channels/"+room+"/messages", "Bot "+f.Token(), map[string]any{
		"content": "card", "components": discordButtons(1, func(int) string { return "why" }, "Deny with reason…"),
	})
	msgID := body["id"].(string)
	type result struct {
		reply string
		err   error
	}
	interaction := func() (id, token string, d map[string]any) {
		fr := c.next("INTERACTION_CREATE")
		_ = json.Unmarshal(fr.D, &d)
		return d["id"].(string), d["token"].(string), d
	}
	input := func(mut func(map[string]any)) map[string]any {
		in := map[string]any{"type": 4, "custom_id": "reason", "label": "Why deny it?", "style": 2, "required": true, "max_length": 1000}
		if mut != nil {
			mut(in)
		}
		return map[string]any{"type": 9, "data": map[string]any{"custom_id": "gh:d:g_1", "title": "Deny with a reason",
			"components": []any{map[string]any{"type": 1, "components": []any{in}}}}}
	}
	done := make(chan result, 1)
	go func() { r, err := f.Press("room", msgID, "why", "alice"); done <- result{r, err} }()
	ixID, tok, _ := interaction()
	cb := "/interactions/" + ixID + "/" + tok + "/callback"
	for name, bad := range map[string]map[string]any{
		"no title":        {"type": 9, "data": map[string]any{"custom_id": "x", "components": []any{}}},
		"no rows":         {"type": 9, "data": map[string]any{"custom_id": "x", "title": "t", "components": []any{}}},
		"long label":      input(func(in map[string]any) { in["label"] = strings.Repeat("l", 46) }),
		"bad style":       input(func(in map[string]any) { in["style"] = 3 }),
		"long max_length": input(func(in map[string]any) { in["max_length"] = 4001 }),
		"a button":        input(func(in map[string]any) { in["type"] = 2 }),
	} {
		if status, _ := discordCall(t, f, "POST", cb, "", bad); status != 400 {
			t.Errorf("modal with %s: %d, want 400", name, status)
		}
	}
	if status, _ := discordCall(t, f, "POST", cb, "", input(nil)); status != 204 {
		t.Fatalf("a good modal: %d", status)
	}
	if r := <-done; r.err != nil {
		t.Fatalf("Press answered with a modal: %v", r.err)
	}
	ixs := f.Interactions()
	first := ixs[len(ixs)-1]
	if first.Type != 9 || first.Modal == nil || first.Modal.Title != "Deny with a reason" || len(first.Modal.Inputs) != 1 || first.Modal.Inputs[0].MaxLength != 1000 {
		t.Fatalf("the modal as held: %+v %+v", first, first.Modal)
	}
	if _, err := f.SubmitModal(first.ID, map[string]string{"reason": ""}); err == nil {
		t.Error("submitted a required input empty")
	}
	if _, err := f.SubmitModal(first.ID, map[string]string{"reason": strings.Repeat("r", 1001)}); err == nil {
		t.Error("submitted more than max_length")
	}
	go func() {
		r, err := f.SubmitModal(first.ID, map[string]string{"reason": "not today"})
		done <- result{r, err}
	}()
	subID, subTok, d := interaction()
	data, _ := d["data"].(map[string]any)
	msg, _ := d["message"].(map[string]any)
	rows, _ := data["components"].([]any)
	if d["type"] != float64(5) || data["custom_id"] != "gh:d:g_1" || msg["id"] != msgID || len(rows) != 1 ||
		!strings.Contains(string(mustJSON(rows)), `"value":"not today"`) {
		t.Fatalf("MODAL_SUBMIT as dispatched: %v", d)
	}
	subCB := "/interactions/" + subID + "/" + subTok + "/callback"
	if status, _ := discordCall(t, f, "POST", subCB, "", input(nil)); status != 400 {
		t.Errorf("a modal answering a modal submission: %d, want 400", status)
	}
	if status, _ := discordCall(t, f, "POST", subCB, "", map[string]any{"type": 7, "data": map[string]any{"content": "Denied: not today", "components": []any{}}}); status != 204 {
		t.Fatalf("type 7 answer to the submission: %d", status)
	}
	if r := <-done; r.err != nil || r.reply != "Denied: not today" {
		t.Fatalf("SubmitModal = %q, %v", r.reply, r.err)
	}
	if ms := f.Messages("room"); ms[0].Text != "Denied: not today" || len(ms[0].Buttons) != 0 {
		t.Fatalf("the card after the submission: %+v", ms[0])
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
