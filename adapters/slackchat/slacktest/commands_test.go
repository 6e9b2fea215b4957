package slacktest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	slackgo "github.com/slack-go/slack"
	"gopkg.in/yaml.v3"

	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
)

// slackApp is an app's slash command endpoint over HTTP that checks
// Slack's signature and answers as the test says.
type slackApp struct {
	mu     sync.Mutex
	f      *slacktest.SlackFake
	status int
	ct     string
	body   string
	delay  time.Duration
	forms  []url.Values
}

func (a *slackApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sv, err := slackgo.NewSecretsVerifier(r.Header, a.f.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		http.Error(w, "bad request", http.StatusUnauthorized)
		return
	}
	form, _ := url.ParseQuery(string(body))
	a.mu.Lock()
	a.forms = append(a.forms, form)
	status, ct, answer, delay := a.status, a.ct, a.body, a.delay
	a.mu.Unlock()
	time.Sleep(delay)
	if ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (a *slackApp) answer(status int, ct, body string, delay time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.ct, a.body, a.delay = status, ct, body, delay
}

func answerJSON(responseType, text string, blocks any) string {
	m := map[string]any{"text": text}
	if responseType != "" {
		m["response_type"] = responseType
	}
	if blocks != nil {
		m["blocks"] = blocks
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func buttonsBlock(n int) map[string]any {
	var els []map[string]any
	for i := range n {
		els = append(els, map[string]any{"type": "button", "action_id": fmt.Sprintf("b%d", i), "value": fmt.Sprintf("gh:v:gr_%d", i),
			"text": map[string]any{"type": "plain_text", "text": "Revoke"}})
	}
	return map[string]any{"type": "actions", "elements": els}
}

func section(text string) map[string]any {
	return map[string]any{"type": "section", "text": map[string]any{"type": "plain_text", "text": text}}
}

func TestSlackFakeSlashCommandChecksTheAnswer(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackAckTimeout(300*time.Millisecond))
	app := &slackApp{f: f}
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	f.SetEventsURL(srv.URL)

	// A good answer: ephemeral, pressable by its user alone.
	app.answer(http.StatusOK, "application/json", answerJSON("ephemeral", "Active grants", []any{section("Active grants"), buttonsBlock(2)}), 0)
	m, err := f.Command("room", "alice", "grants")
	if err != nil || m.ID == "" || m.Text != "Active grants" || !slices.Equal(m.Buttons, []string{"gh:v:gr_0", "gh:v:gr_1"}) {
		t.Fatalf("good answer: %+v %v", m, err)
	}
	if len(f.Messages("room")) != 0 || !slices.Equal(f.Ephemerals("room", "alice"), []string{"Active grants"}) {
		t.Fatalf("an ephemeral answer is alice's alone: %+v %q", f.Messages("room"), f.Ephemerals("room", "alice"))
	}
	app.mu.Lock()
	form := app.forms[0]
	app.mu.Unlock()
	if form.Get("command") != "/grants" || form.Get("user_id") != f.UserID("alice") || form.Get("user_name") != "alice" ||
		form.Get("channel_id") != f.ChatID("room") || form.Get("trigger_id") == "" || form.Get("team_id") != f.TeamID ||
		form.Get("response_url") == "" || form.Get("text") != "" {
		t.Fatalf("slash command form: %v", form)
	}
	// Plain text is an ephemeral text; an empty answer shows nothing.
	app.answer(http.StatusOK, "text/plain", "Just text.", 0)
	if m, err := f.Command("dm-alice", "alice", "grants"); err != nil || m.Text != "Just text." || m.ID == "" {
		t.Fatalf("plain text: %+v %v", m, err)
	}
	app.answer(http.StatusOK, "", "", 0)
	if m, err := f.Command("room", "alice", "grants"); err != nil || m.ID != "" {
		t.Fatalf("empty answer: %+v %v", m, err)
	}
	if errs := f.Errors(); len(errs) != 0 {
		t.Fatalf("refusals of good answers: %q", errs)
	}

	for _, tc := range []struct {
		name, want string
		status     int
		body       string
		delay      time.Duration
	}{
		{"26 buttons", "1 to 25 elements", http.StatusOK, answerJSON("ephemeral", "x", []any{buttonsBlock(26)}), 0},
		{"long section", "at most 3000", http.StatusOK, answerJSON("ephemeral", "x", []any{section(strings.Repeat("a", 3001))}), 0},
		{"unknown block", "unknown block type", http.StatusOK, answerJSON("ephemeral", "x", []any{map[string]any{"type": "banner"}}), 0},
		{"long text", "msg_too_long", http.StatusOK, answerJSON("ephemeral", strings.Repeat("a", 40001), nil), 0},
		{"no text", "no_text", http.StatusOK, answerJSON("ephemeral", " ", nil), 0},
		{"response type", "invalid_response_type", http.StatusOK, answerJSON("everyone", "x", nil), 0},
		{"not JSON", "invalid_payload", http.StatusOK, "{", 0},
		{"500", "HTTP 500", http.StatusInternalServerError, "oops", 0},
		{"too slow", "no answer within", http.StatusOK, answerJSON("ephemeral", "late", nil), time.Second},
	} {
		ct := "application/json"
		app.answer(tc.status, ct, tc.body, tc.delay)
		before := len(f.Errors())
		m, err := f.Command("room", "alice", "grants")
		errs := f.Errors()
		if err == nil || m.ID != "" || len(errs) != before+1 || !strings.Contains(errs[before], tc.want) {
			t.Fatalf("%s: %+v %v, refusals %q", tc.name, m, err, errs[before:])
		}
	}
	if got := f.Ephemerals("room", "alice"); len(got) != 1 {
		t.Fatalf("a refused answer was shown: %q", got)
	}
}

func TestSlackFakeDeliversOnlyTheManifestsCommands(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackSlashCommands("/status"))
	if _, err := f.Command("room", "alice", "grants"); err == nil {
		t.Fatal("a command the app does not declare was delivered")
	}
	if errs := f.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "not declared") {
		t.Fatalf("refusals: %q", errs)
	}
}

// The fake's default commands are what docs/slack-app-manifest.yaml
// declares, and the manifest has what the adapter needs.
func TestManifestDeclaresTheFakesCommands(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			SlashCommands []struct {
				Command      string `yaml:"command"`
				Description  string `yaml:"description"`
				ShouldEscape *bool  `yaml:"should_escape"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				BotEvents []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				IsEnabled bool `yaml:"is_enabled"`
			} `yaml:"interactivity"`
			SocketMode bool `yaml:"socket_mode_enabled"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, c := range m.Features.SlashCommands {
		if c.ShouldEscape == nil || *c.ShouldEscape || c.Description == "" {
			t.Errorf("%s: should_escape must be false and a description set", c.Command)
		}
		cmds = append(cmds, c.Command)
	}
	if !slices.Equal(cmds, slacktest.ManifestSlashCommands) {
		t.Errorf("manifest declares %v, the fake delivers %v", cmds, slacktest.ManifestSlashCommands)
	}
	for _, s := range []string{"chat:write", "commands", "channels:history", "groups:history", "im:history", "mpim:history"} {
		if !slices.Contains(m.OAuth.Scopes.Bot, s) {
			t.Errorf("bot scope %s missing", s)
		}
	}
	for _, e := range []string{"message.channels", "message.groups", "message.im", "message.mpim"} {
		if !slices.Contains(m.Settings.Events.BotEvents, e) {
			t.Errorf("bot event %s missing", e)
		}
	}
	if !m.Settings.Interactivity.IsEnabled || !m.Settings.SocketMode {
		t.Errorf("interactivity and socket mode must be on: %+v", m.Settings)
	}
}

func TestSlackFakeSlashCommandOverSocket(t *testing.T) {
	f := slacktest.NewSlack(t, slacktest.SlackAckTimeout(500*time.Millisecond))
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
	ws, _, err := websocket.DefaultDialer.Dial(open.URL, http.Header{"Origin": {"https://api.slack.com"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	type envelope struct {
		Type                   string            `json:"type"`
		EnvelopeID             string            `json:"envelope_id"`
		AcceptsResponsePayload bool              `json:"accepts_response_payload"`
		Payload                map[string]string `json:"payload"`
	}
	read := func() envelope {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var env envelope
		if err := ws.ReadJSON(&env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	if hello := read(); hello.Type != "hello" {
		t.Fatalf("first message %+v", hello)
	}
	type result struct {
		text    string
		buttons []string
		err     error
	}
	command := func(ack func(env envelope)) result {
		t.Helper()
		done := make(chan result, 1)
		go func() {
			m, err := f.Command("dm-alice", "alice", "grants")
			done <- result{m.Text, m.Buttons, err}
		}()
		env := read()
		// Every field is a string, is_enterprise_install too.
		if env.Type != "slash_commands" || !env.AcceptsResponsePayload || env.Payload["command"] != "/grants" ||
			env.Payload["user_id"] != f.UserID("alice") || env.Payload["channel_id"] != f.ChatID("dm-alice") ||
			env.Payload["channel_name"] != "directmessage" || env.Payload["is_enterprise_install"] != "false" || env.Payload["trigger_id"] == "" {
			t.Fatalf("envelope: %+v", env)
		}
		ack(env)
		return <-done
	}
	ackWith := func(payload any) func(envelope) {
		return func(env envelope) {
			if err := ws.WriteJSON(map[string]any{"envelope_id": env.EnvelopeID, "payload": payload}); err != nil {
				t.Fatal(err)
			}
		}
	}
	good := map[string]any{"response_type": "ephemeral", "text": "Active grants", "blocks": []any{section("Active grants"), buttonsBlock(1)}}
	if r := command(ackWith(good)); r.err != nil || r.text != "Active grants" || len(r.buttons) != 1 {
		t.Fatalf("good answer: %+v", r)
	}
	if errs := f.Errors(); len(errs) != 0 {
		t.Fatalf("refusals: %q", errs)
	}
	bad := map[string]any{"response_type": "ephemeral", "text": "x", "blocks": []any{buttonsBlock(26)}}
	if r := command(ackWith(bad)); r.err == nil {
		t.Fatalf("26 buttons were shown: %+v", r)
	}
	big := map[string]any{"text": strings.Repeat("a", 21*1024)}
	if r := command(ackWith(big)); r.err == nil {
		t.Fatalf("a 21 KB socket response was shown: %+v", r)
	}
	if r := command(func(envelope) {}); r.err == nil {
		t.Fatalf("an unacknowledged command was answered: %+v", r)
	}
	errs := f.Errors()
	if len(errs) != 4 || !strings.Contains(errs[0], "1 to 25 elements") || !strings.Contains(errs[1], "bytes") ||
		!strings.Contains(errs[2], "operation_timeout") {
		t.Fatalf("refusals: %q", errs)
	}
}
