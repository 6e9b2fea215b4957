package slacktest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	slackgo "github.com/slack-go/slack"

	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
)

type slackAnswer struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	TS    string `json:"ts"`
	URL   string `json:"url"`
}

// slackCall makes a form-encoded Web API call, as slack-go does.
func slackCall(t *testing.T, f *slacktest.SlackFake, method string, form url.Values) (int, slackAnswer) {
	t.Helper()
	resp, err := http.PostForm(f.URL+"/api/"+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a slackAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: answer is not Slack's shape: %v", method, err)
	}
	return resp.StatusCode, a
}

func slackButtons(n int, label, value string, actionIDs ...string) string {
	var els []map[string]any
	for i := range n {
		id := "b" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if i < len(actionIDs) {
			id = actionIDs[i]
		}
		els = append(els, map[string]any{"type": "button", "action_id": id, "value": value,
			"text": map[string]any{"type": "plain_text", "text": label}})
	}
	b, _ := json.Marshal([]any{map[string]any{"type": "actions", "elements": els}})
	return string(b)
}

func TestSlackFakeRefusesWhatSlackRefuses(t *testing.T) {
	f := slacktest.NewSlack(t)
	room := f.ChatID("room")
	with := func(kv ...string) url.Values {
		v := url.Values{"token": {f.BotToken}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	section := func(typ, text string, emoji bool) string {
		obj := map[string]any{"type": typ, "text": text}
		if emoji {
			obj["emoji"] = true
		}
		b, _ := json.Marshal([]any{map[string]any{"type": "section", "text": obj}})
		return string(b)
	}
	cases := []struct {
		name, method string
		form         url.Values
		want         string
	}{
		{"no token", "auth.test", url.Values{}, "not_authed"},
		{"wrong token", "auth.test", url.Values{"token": {"xoxb-nope"}}, "invalid_auth"},
		{"app token for a bot method", "chat.postMessage", url.Values{"token": {f.AppToken}, "channel": {room}, "text": {"x"}}, "not_allowed_token_type"},
		{"bot token for a socket", "apps.connections.open", with(), "not_allowed_token_type"},
		{"unknown channel", "chat.postMessage", with("channel", "C404", "text", "x"), "channel_not_found"},
		{"no text", "chat.postMessage", with("channel", room), "no_text"},
		{"text over 40,000", "chat.postMessage", with("channel", room, "text", strings.Repeat("a", 40001)), "msg_too_long"},
		{"button label over 75", "chat.postMessage", with("channel", room, "text", "x", "blocks", slackButtons(1, strings.Repeat("l", 76), "v")), "invalid_blocks"},
		{"action_id twice in a block", "chat.postMessage", with("channel", room, "text", "x", "blocks", slackButtons(2, "ok", "v", "same", "same")), "invalid_blocks"},
		{"26 buttons", "chat.postMessage", with("channel", room, "text", "x", "blocks", slackButtons(26, "ok", "v")), "invalid_blocks"},
		{"value over 2000", "chat.postMessage", with("channel", room, "text", "x", "blocks", slackButtons(1, "ok", strings.Repeat("v", 2001))), "invalid_blocks"},
		{"section over 3000", "chat.postMessage", with("channel", room, "text", "x", "blocks", section("mrkdwn", strings.Repeat("s", 3001), false)), "invalid_blocks"},
		{"emoji on mrkdwn", "chat.postMessage", with("channel", room, "text", "x", "blocks", section("mrkdwn", "s", true)), "invalid_blocks"},
		{"blocks not an array", "chat.postMessage", with("channel", room, "text", "x", "blocks", `{"type":"section"}`), "invalid_blocks"},
		{"unknown block", "chat.postMessage", with("channel", room, "text", "x", "blocks", `[{"type":"hologram"}]`), "invalid_blocks"},
		{"malformed thread_ts", "chat.postMessage", with("channel", room, "text", "x", "thread_ts", "yesterday"), "invalid_thread_ts"},
		{"update of nothing", "chat.update", with("channel", room, "ts", "1.000000", "text", "x"), "message_not_found"},
		{"ephemeral to a stranger", "chat.postEphemeral", with("channel", room, "user", "U404", "text", "x"), "user_not_in_channel"},
		{"unknown method", "chat.unfurlEverything", with(), "unknown_method"},
	}
	for i, tc := range cases {
		status, a := slackCall(t, f, tc.method, tc.form)
		if status != http.StatusOK || a.OK || a.Error != tc.want {
			t.Errorf("%s: %d %+v, want ok:false error %s", tc.name, status, a, tc.want)
		}
		if n := len(f.Errors()); n != i+1 {
			t.Fatalf("%s: %d refusals recorded, want %d", tc.name, n, i+1)
		}
	}

	// What Slack accepts, the fake accepts: a JSON call with the token in
	// Authorization, a label of exactly 75 characters, 25 buttons.
	body, _ := json.Marshal(map[string]any{"channel": room, "text": "json", "blocks": json.RawMessage(slackButtons(25, strings.Repeat("l", 75), "v"))})
	req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/chat.postMessage", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+f.BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var a slackAnswer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if !a.OK || a.TS == "" {
		t.Fatalf("a valid JSON call: %+v", a)
	}
	if n := len(f.Errors()); n != len(cases) {
		t.Fatalf("a valid call was recorded as refused: %q", f.Errors()[len(cases):])
	}
}

func TestSlackFakeUpdateKeepsBlocksUnlessSent(t *testing.T) {
	f := slacktest.NewSlack(t)
	room := f.ChatID("room")
	form := url.Values{"token": {f.BotToken}, "channel": {room}, "text": {"card"}, "blocks": {slackButtons(2, "ok", "gh:a:g1")}}
	_, posted := slackCall(t, f, "chat.postMessage", form)

	_, a := slackCall(t, f, "chat.update", url.Values{"token": {f.BotToken}, "channel": {room}, "ts": {posted.TS}, "text": {"new text"}})
	if m := f.Messages("room")[0]; !a.OK || m.Text != "new text" || len(m.Buttons) != 2 || !m.Edited {
		t.Fatalf("chat.update without blocks keeps them, as Slack does: %+v", m)
	}
	_, a = slackCall(t, f, "chat.update", url.Values{"token": {f.BotToken}, "channel": {room}, "ts": {posted.TS}, "text": {"decided"}, "blocks": {"[]"}})
	if m := f.Messages("room")[0]; !a.OK || len(m.Buttons) != 0 {
		t.Fatalf("blocks=[] removes them: %+v", m)
	}
	if _, a := slackCall(t, f, "chat.update", url.Values{"token": {f.BotToken}, "channel": {room}, "ts": {posted.TS + "1"}, "text": {"x"}}); a.Error != "message_not_found" {
		t.Fatalf("unknown ts: %+v", a)
	}
}

func TestSlackFakeRateLimit(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackRateLimit(time.Second))
	form := url.Values{"token": {f.BotToken}, "channel": {f.ChatID("room")}, "text": {"x"}}
	if _, a := slackCall(t, f, "chat.postMessage", form); !a.OK {
		t.Fatalf("first: %+v", a)
	}
	resp, err := http.PostForm(f.URL+"/api/chat.postMessage", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("second within a second: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if len(f.Throttled()) != 1 || len(f.Errors()) != 0 || len(f.Messages("room")) != 1 {
		t.Fatalf("throttled %q errors %q", f.Throttled(), f.Errors())
	}
}

type slackEnvelope struct {
	EnvelopeID   string `json:"envelope_id"`
	Type         string `json:"type"`
	RetryAttempt int    `json:"retry_attempt"`
	RetryReason  string `json:"retry_reason"`
	Payload      struct {
		EventID string `json:"event_id"`
	} `json:"payload"`
}

func TestSlackFakeSocketResendsUntilAckedAndRefusesDoubleAcks(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackAckTimeout(100*time.Millisecond))
	// apps.connections.open is a JSON method: the app token goes in
	// Authorization.
	req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/apps.connections.open", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.AppToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var open slackAnswer
	_ = json.NewDecoder(resp.Body).Decode(&open)
	resp.Body.Close()
	if !open.OK || !strings.HasPrefix(open.URL, "ws://127.0.0.1:") {
		t.Fatalf("apps.connections.open: %+v", open)
	}
	hdr := http.Header{"Origin": {"https://api.slack.com"}}
	ws, _, err := websocket.DefaultDialer.Dial(open.URL, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() slackEnvelope {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var env slackEnvelope
		if err := ws.ReadJSON(&env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	if hello := read(); hello.Type != "hello" {
		t.Fatalf("first message %+v, want hello", hello)
	}
	if _, _, err := websocket.DefaultDialer.Dial(open.URL, hdr); err == nil {
		t.Fatal("a socket URL is good for one connection")
	}

	upd := f.Say("room", "alice", "hi", false)
	first, second := read(), read()
	if first.Type != "events_api" || first.Payload.EventID != upd || first.RetryAttempt != 0 {
		t.Fatalf("first delivery: %+v", first)
	}
	if second.Payload.EventID != upd || second.RetryAttempt != 1 || second.RetryReason != "timeout" || second.EnvelopeID == first.EnvelopeID {
		t.Fatalf("resend: %+v", second)
	}
	ack := map[string]string{"envelope_id": second.EnvelopeID}
	if err := ws.WriteJSON(ack); err != nil {
		t.Fatal(err)
	}
	// The same ack once more: Slack would take it as a protocol error.
	if err := ws.WriteJSON(ack); err != nil {
		t.Fatal(err)
	}
	// Wait for both refusals (the used ticket, the second ack): the second
	// is recorded after the ack, so waiting for one raced under load.
	deadline := time.Now().Add(5 * time.Second)
	for !f.Acked(upd) || len(f.Errors()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("acked %v, errors %q", f.Acked(upd), f.Errors())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if errs := f.Errors(); len(errs) != 2 || !strings.Contains(errs[0], "ticket") || !strings.Contains(errs[1], "twice") {
		t.Fatalf("refusals: %q", errs)
	}

	// Unacknowledged, an event is sent four times in all, then dropped.
	lost := f.Say("room", "alice", "nobody acks me", false)
	for i := range 4 {
		if env := read(); env.Payload.EventID != lost || env.RetryAttempt != i {
			t.Fatalf("attempt %d: %+v", i, env)
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, msg, err := ws.ReadMessage(); err == nil {
		t.Fatalf("a fifth delivery: %s", msg)
	}
	if n := f.Deliveries(lost); n != 4 {
		t.Fatalf("deliveries %d", n)
	}
}

func TestSlackFakeEventsAPIRetriesWithRetryNum(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackRetryDelay(10*time.Millisecond))
	var mu sync.Mutex
	var retryNums []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sv, err := slackgo.NewSecretsVerifier(r.Header, f.SigningSecret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			t.Errorf("the fake's request does not verify: %v", err)
		}
		mu.Lock()
		retryNums = append(retryNums, r.Header.Get("X-Slack-Retry-Num"))
		n := len(retryNums)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	f.SetEventsURL(srv.URL)
	upd := f.Say("room", "alice", "hi", false)
	deadline := time.Now().Add(5 * time.Second)
	for !f.Acked(upd) {
		if time.Now().After(deadline) {
			t.Fatalf("never acknowledged: %v", f.Statuses(upd))
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(retryNums, []string{"", "1", "2"}) || !slices.Equal(f.Statuses(upd), []int{500, 500, 200}) {
		t.Fatalf("retry numbers %q, statuses %v", retryNums, f.Statuses(upd))
	}
}

// views.open takes a press's trigger_id once, within 3 s, and a modal
// Slack would take; submitting the modal is a view_submission carrying
// the view with the values typed, and closes it.
func TestSlackFakeViewsOpenAndSubmission(t *testing.T) {
	f := slacktest.NewSlack(t)
	interactions := make(chan map[string]any, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		var p map[string]any
		_ = json.Unmarshal([]byte(form.Get("payload")), &p)
		interactions <- p
	}))
	defer srv.Close()
	f.SetEventsURL(srv.URL)
	_, post := slackCall(t, f, "chat.postMessage", url.Values{"token": {f.BotToken}, "channel": {f.ChatID("room")}, "text": {"card"},
		"blocks": {slackButtons(1, "Deny with reason…", "why")}})
	api := slackgo.New(f.BotToken, slackgo.OptionAPIURL(f.URL+"/api/"))
	plain := func(s string) *slackgo.TextBlockObject {
		return slackgo.NewTextBlockObject(slackgo.PlainTextType, s, false, false)
	}
	view := func(title string, submit bool) slackgo.ModalViewRequest {
		in := slackgo.NewPlainTextInputBlockElement(nil, "reason")
		in.MaxLength = 500
		v := slackgo.ModalViewRequest{Type: slackgo.VTModal, Title: plain(title), CallbackID: "cb", PrivateMetadata: `{"g":"g_1"}`,
			Blocks: slackgo.Blocks{BlockSet: []slackgo.Block{slackgo.NewInputBlock("why", plain("Reason"), nil, in)}}}
		if submit {
			v.Submit = plain("Deny")
		}
		return v
	}
	replies := make(chan string, 1)
	go func() { r, _ := f.Press("room", post.TS, "why", "alice"); replies <- r }()
	trigger, _ := (<-interactions)["trigger_id"].(string)
	for name, v := range map[string]slackgo.ModalViewRequest{"a long title": view(strings.Repeat("t", 25), true), "no submit": view("Deny", false)} {
		if _, err := api.OpenView(trigger, v); err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
			t.Errorf("views.open with %s: %v", name, err)
		}
	}
	if _, err := api.OpenView("12345.98765.abcd", view("Deny", true)); err == nil || !strings.Contains(err.Error(), "invalid_trigger_id") {
		t.Errorf("an unknown trigger: %v", err)
	}
	opened, err := api.OpenView(trigger, view("Deny", true))
	if err != nil || opened.View.ID == "" {
		t.Fatalf("views.open: %+v %v", opened, err)
	}
	if r := <-replies; r != "modal: Deny" {
		t.Fatalf("the press saw %q", r)
	}
	if _, err := api.OpenView(trigger, view("Deny", true)); err == nil || !strings.Contains(err.Error(), "exchanged_trigger_id") {
		t.Errorf("a trigger used twice: %v", err)
	}
	views := f.Views("alice")
	if len(views) != 1 || views[0].CallbackID != "cb" || len(views[0].Inputs) != 1 || views[0].Inputs[0].MaxLength != 500 {
		t.Fatalf("views: %+v", views)
	}
	if _, err := f.SubmitView(views[0].ID, map[string]string{"why/reason": strings.Repeat("r", 501)}, "room", post.TS); err == nil {
		t.Error("submitted more than max_length")
	}
	go func() {
		p := <-interactions
		v, _ := p["view"].(map[string]any)
		state, _ := json.Marshal(v["state"])
		if p["type"] != "view_submission" || v["callback_id"] != "cb" || v["private_metadata"] != `{"g":"g_1"}` ||
			!strings.Contains(string(state), `"value":"not today"`) {
			t.Errorf("view_submission: %v", p)
		}
		u, _ := p["user"].(map[string]any)
		slackCall(t, f, "chat.postEphemeral", url.Values{"token": {f.BotToken}, "channel": {f.ChatID("room")}, "user": {u["id"].(string)}, "text": {"Denied."}})
	}()
	if r, err := f.SubmitView(views[0].ID, map[string]string{"why/reason": "not today"}, "room", post.TS); err != nil || r != "Denied." {
		t.Fatalf("SubmitView = %q, %v", r, err)
	}
	if _, err := f.SubmitView(views[0].ID, map[string]string{"why/reason": "again"}, "room", post.TS); err == nil {
		t.Error("a submitted view was submitted again")
	}
	// A trigger is good for 3 s only.
	go func() { f.Press("room", post.TS, "why", "alice") }()
	late, _ := (<-interactions)["trigger_id"].(string)
	time.Sleep(3100 * time.Millisecond)
	if _, err := api.OpenView(late, view("Deny", true)); err == nil || !strings.Contains(err.Error(), "expired_trigger_id") {
		t.Errorf("a trigger after 3 s: %v", err)
	}
}
