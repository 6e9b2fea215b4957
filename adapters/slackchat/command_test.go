package slackchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
)

// grantsReply is a /grants answer listing two grants.
func grantsReply() chat.CommandReply {
	return chat.CommandReply{
		Text: "Active grants in this chat:\n1. email_send to <sara@example.com> & co. Grant gr_1.\n2. post_note. Grant gr_2.",
		Buttons: []chat.Button{
			{Label: "Revoke email_send", Data: chat.ButtonData("gr_1", chat.ChoiceRevokeGrant), Style: "danger"},
			{Label: "Revoke post_note", Data: chat.ButtonData("gr_2", chat.ChoiceRevokeGrant), Style: "danger"},
		},
	}
}

// checkGrantsAnswer checks what the user was shown for grantsReply and
// that pressing its second Revoke reaches Press as a press of the
// ephemeral message, answered to the presser alone.
func checkGrantsAnswer(t *testing.T, rec *recorder, f *slacktest.SlackFake, chatName string, reply adaptertest.Message) {
	t.Helper()
	want := grantsReply()
	if !strings.Contains(reply.Text, "email_send to &lt;sara@example.com&gt; &amp; co.") || reply.ID == "" {
		t.Fatalf("answer: %+v", reply)
	}
	if len(reply.Buttons) != 2 || reply.Buttons[0] != want.Buttons[0].Data || reply.Buttons[1] != want.Buttons[1].Data {
		t.Fatalf("answer buttons: %v", reply.Buttons)
	}
	if eph := f.Ephemerals(chatName, "bob"); len(eph) != 1 || eph[0] != reply.Text {
		t.Fatalf("the answer must be ephemeral, to bob: %q", eph)
	}
	for _, m := range f.Messages(chatName) {
		if m.ID == reply.ID {
			t.Fatal("the answer is in the channel for everyone")
		}
	}
	if _, err := f.Press(chatName, reply.ID, reply.Buttons[1], "carol"); err == nil {
		t.Fatal("carol pressed a button of a message only bob sees")
	}
	rec.setPress(func(p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Won: true, Text: "Revoked: post_note asks again."}, nil
	})
	answer, err := f.Press(chatName, reply.ID, reply.Buttons[1], "bob")
	if err != nil || answer != "Revoked: post_note asks again." {
		t.Fatalf("Revoke press: %q %v", answer, err)
	}
	p := rec.nextPress(t)
	if p.GateID != "gr_2" || p.Choice != chat.ChoiceRevokeGrant || p.ChatID != f.ChatID(chatName) ||
		p.MessageID != reply.ID || p.UserID != f.UserID("bob") || p.ThreadID != "" {
		t.Fatalf("press: %+v", p)
	}
}

func TestSlashCommandOverSocketMode(t *testing.T) {
	rec := newRecorder()
	rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) { return grantsReply(), nil })
	_, f := socketPair(t, rec)

	reply, err := f.SlashCommand("dm-bob", "bob", "/grants", " all ")
	if err != nil {
		t.Fatal(err)
	}
	c := rec.nextCommand(t)
	triggers := f.CommandTriggers()
	if c.name != chat.CommandGrants || c.in.Platform != gh.PlatformSlack || len(triggers) != 1 || c.in.UpdateID != triggers[0] ||
		c.in.ChatID != f.ChatID("dm-bob") || c.in.ChatType != gh.ChatDM || c.in.ThreadID != "" ||
		c.in.UserID != f.UserID("bob") || c.in.UserName != "bob" || c.in.Text != "all" || !c.in.ReceivedAt.Equal(fixedNow) {
		t.Fatalf("command: %q %+v", c.name, c.in)
	}
	checkGrantsAnswer(t, rec, f, "dm-bob", reply)
	noErrors(t, f)
}

func TestSlashCommandAnswersWhenTheSinkCannot(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	for _, tc := range []struct {
		name  string
		reply chat.CommandReply
		err   error
		want  string
	}{
		{"error", chat.CommandReply{}, errors.New("database is down"), "try again"},
		{"refused", chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true}, nil, "not allowed"},
		{"duplicate", chat.CommandReply{Duplicate: true}, nil, ""},
	} {
		rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) { return tc.reply, tc.err })
		reply, err := f.Command("room", "bob", chat.CommandGrants)
		rec.nextCommand(t)
		if err != nil || !strings.Contains(reply.Text, tc.want) || len(reply.Buttons) != 0 || (tc.want == "") != (reply.ID == "") {
			t.Fatalf("%s: %+v %v", tc.name, reply, err)
		}
	}
	noErrors(t, f)
}

// An unknown slash command (declared in the app, unknown to the gateway)
// is answered to its sender alone and is in the receive log.
func TestUnknownSlashCommandIsAnsweredAndLogged(t *testing.T) {
	var fake *slacktest.SlackFake
	factory := func(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		fake = slacktest.NewSlack(t, slacktest.SlackSlashCommands("/grants", "/status"))
		a, err := slackchat.New(fake.SocketConfig())
		if err != nil {
			t.Fatalf("slack adapter: %v", err)
		}
		return a, fake
	}
	s := stacktest.Stack(t, factory, adaptertest.StackOptions{Allowed: []string{"alice"}})
	reply, err := fake.SlashCommand("room", "alice", "/status", "now")
	if err != nil || !strings.Contains(reply.Text, "knows /grants") || reply.ID == "" || len(reply.Buttons) != 0 {
		t.Fatalf("answer: %+v %v", reply, err)
	}
	if eph := fake.Ephemerals("room", "alice"); len(eph) != 1 || eph[0] != reply.Text {
		t.Fatalf("the answer must be ephemeral: %q", eph)
	}
	if len(fake.Messages("room")) != 0 {
		t.Fatalf("the channel got messages: %+v", fake.Messages("room"))
	}
	triggers := fake.CommandTriggers()
	row := adaptertest.WaitReceive(t, s.Ctx, s.Store, gh.PlatformSlack, triggers[len(triggers)-1])
	if row.Reason != chat.ReasonCommand || row.Text != "/status now" || row.UserID != fake.UserID("alice") || row.ChatID != fake.ChatID("room") {
		t.Fatalf("receive log: %+v", row)
	}
	noErrors(t, fake)
}

// formPost sends a form to the handler as Slack sends a slash command,
// signed with secret ("" for no signature).
func formPost(t *testing.T, target, secret string, at time.Time, form url.Values) (int, http.Header, []byte) {
	t.Helper()
	body := []byte(form.Encode())
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
		req.Header.Set("X-Slack-Signature", slacktest.SlackSignature(secret, at.Unix(), body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestSlashCommandOverHTTP(t *testing.T) {
	rec := newRecorder()
	rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) { return grantsReply(), nil })
	_, f := slacktest.SlackEventsPair(t, rec)
	form := url.Values{
		"command": {"/grants"}, "text": {""}, "channel_id": {f.ChatID("room")}, "channel_name": {"room"},
		"user_id": {f.UserID("bob")}, "user_name": {"bob"}, "team_id": {f.TeamID}, "trigger_id": {"123.456.abc"},
		"response_url": {f.URL + "/commands/x"}, "api_app_id": {f.AppID}, "token": {"fakeverificationtoken"},
	}

	// Unsigned, forged, stale: 401 and nothing reaches the sink.
	for name, post := range map[string]func() int{
		"unsigned": func() int { s, _, _ := formPost(t, f.EventsURL(), "", time.Now(), form); return s },
		"forged":   func() int { s, _, _ := formPost(t, f.EventsURL(), "not-the-secret", time.Now(), form); return s },
		"stale": func() int {
			s, _, _ := formPost(t, f.EventsURL(), f.SigningSecret, time.Now().Add(-6*time.Minute), form)
			return s
		},
	} {
		if status := post(); status != http.StatusUnauthorized {
			t.Fatalf("%s: %d", name, status)
		}
	}
	select {
	case c := <-rec.commands:
		t.Fatalf("a refused request reached Command: %+v", c)
	default:
	}

	status, h, body := formPost(t, f.EventsURL(), f.SigningSecret, time.Now(), form)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("signed: %d %s %s", status, h.Get("Content-Type"), body)
	}
	var msg struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
		Blocks       []struct {
			Type     string `json:"type"`
			Elements []struct {
				Value string `json:"value"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.ResponseType != "ephemeral" || !strings.Contains(msg.Text, "&lt;sara@example.com&gt;") ||
		len(msg.Blocks) != 2 || msg.Blocks[1].Type != "actions" || len(msg.Blocks[1].Elements) != 2 {
		t.Fatalf("answer: %s %v", body, err)
	}
	if c := rec.nextCommand(t); c.name != chat.CommandGrants || c.in.UpdateID != "123.456.abc" || c.in.ChatType != gh.ChatChannel {
		t.Fatalf("command: %+v", c)
	}

	// The same through the fake, which checks the answer as Slack does,
	// then a press of its Revoke button over HTTP.
	reply, err := f.Command("room", "bob", chat.CommandGrants)
	if err != nil {
		t.Fatal(err)
	}
	rec.nextCommand(t)
	checkGrantsAnswer(t, rec, f, "room", reply)
	noErrors(t, f)
}

// Over HTTP with the whole gateway: a command with a bad signature is
// refused with 401 and leaves no receive-log row; a signed one is
// answered and logged.
func TestUnsignedSlashCommandIsNotLogged(t *testing.T) {
	var fake *slacktest.SlackFake
	factory := func(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := slacktest.SlackEventsFactory(t)
		fake = f.(*slacktest.SlackFake)
		return a, f
	}
	s := stacktest.Stack(t, factory, adaptertest.StackOptions{Allowed: []string{"alice"}})
	form := url.Values{
		"command": {"/grants"}, "channel_id": {fake.ChatID("room")}, "user_id": {fake.UserID("alice")},
		"user_name": {"alice"}, "trigger_id": {"999.888.forged"},
	}
	if status, _, _ := formPost(t, fake.EventsURL(), "not-the-secret", time.Now(), form); status != http.StatusUnauthorized {
		t.Fatalf("forged: %d", status)
	}
	if status, _, body := formPost(t, fake.EventsURL(), fake.SigningSecret, time.Now(), url.Values{
		"command": {"/grants"}, "channel_id": {fake.ChatID("room")}, "user_id": {fake.UserID("alice")},
		"user_name": {"alice"}, "trigger_id": {"999.888.signed"},
	}); status != http.StatusOK || !bytes.Contains(body, []byte("ephemeral")) {
		t.Fatalf("signed: %d %s", status, body)
	}
	adaptertest.WaitReceive(t, s.Ctx, s.Store, gh.PlatformSlack, "999.888.signed")
	if _, ok, err := s.Store.ReceiveByUpdate(context.Background(), gh.PlatformSlack, "999.888.forged"); err != nil || ok {
		t.Fatalf("the forged command is in the receive log: %v %v", ok, err)
	}
}

// A grant's notice is a card without a gate and with one Revoke button;
// its press, answered Won with no card, is answered to the presser alone
// and leaves the notice as it is.
func TestGrantNoticeRevokeButton(t *testing.T) {
	rec := newRecorder()
	a, f := socketPair(t, rec)
	revoke := chat.Button{Label: "Revoke post_note", Data: chat.ButtonData("gr_9", chat.ChoiceRevokeGrant), Style: "danger"}
	text := slackchat.Format("🔓 alice approved post_note for this chat until 05:17 UTC. Grant gr_9.")
	id, err := a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("room")}, Text: text,
		Card: &chat.Card{Text: text, Buttons: []chat.Button{revoke}}})
	if err != nil {
		t.Fatal(err)
	}
	posts := f.Posts("room")
	if len(posts) != 1 || len(posts[0].Buttons) != 1 || posts[0].Buttons[0].ActionID != "gh_revoke" ||
		posts[0].Buttons[0].Value != revoke.Data || posts[0].Buttons[0].Style != "danger" {
		t.Fatalf("notice: %+v", posts)
	}
	rec.setPress(func(p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Won: true, Text: "Revoked: post_note asks again."}, nil
	})
	if reply, err := f.Press("room", id, revoke.Data, "alice"); err != nil || reply != "Revoked: post_note asks again." {
		t.Fatalf("press: %q %v", reply, err)
	}
	if p := rec.nextPress(t); p.GateID != "gr_9" || p.Choice != chat.ChoiceRevokeGrant || p.MessageID != id {
		t.Fatalf("press: %+v", p)
	}
	if posts := f.Posts("room"); posts[0].Edited {
		t.Fatal("the notice was edited")
	}
	noErrors(t, f)
}

// "!tz Europe/Berlin" typed as a message (in a thread, where a slash
// command cannot be sent) goes to the sink as /tz with its argument, not
// to Receive, and the answer is posted in that thread.
func TestTimeZoneTypedAsAMessage(t *testing.T) {
	rec := newRecorder()
	_, f := socketPair(t, rec)
	rec.setCommand(func(string, gh.Inbound) (chat.CommandReply, error) {
		return chat.CommandReply{Text: "Your time zone is now Europe/Berlin."}, nil
	})
	f.Say("room", "bob", "hello", false)
	top := rec.next(t)
	upd := f.SayInThread("room", top.MessageID, "bob", "!tz  Europe/Berlin ", false)
	c := rec.nextCommand(t)
	if c.name != chat.CommandTimeZone || c.in.Text != "Europe/Berlin" || c.in.ThreadID == "" {
		t.Fatalf("command %q %+v", c.name, c.in)
	}
	adaptertest.Eventually(t, "the answer in the thread", func() bool {
		for _, p := range f.Posts("room") {
			if p.Text == "Your time zone is now Europe/Berlin." && p.ThreadTS == c.in.ThreadID {
				return true
			}
		}
		return false
	})
	adaptertest.Eventually(t, "the event acknowledged", func() bool { return f.Acked(upd) })
	noReceive(t, rec)
	noErrors(t, f)
}
