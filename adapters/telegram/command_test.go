package telegram_test

import (
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// Connect registers /grants, /library and /tz with setMyCommands, once per start, in both
// modes, as the fake (strict about names and descriptions) accepts it.
func TestConnectRegistersCommands(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{Webhook: webhook})
		if got := f.Commands(); len(got) != 0 {
			t.Fatalf("webhook=%v: commands before Connect: %v", webhook, got)
		}
		adaptertest.Connect(t, a, newSink(), 5*time.Second)
		adaptertest.Eventually(t, "the commands registered", func() bool {
			return slices.Equal(f.Commands(), []string{
				chat.CommandGrants,
				chat.CommandLibrary,
				chat.CommandModel,
				chat.CommandThink,
				chat.CommandTimeZone,
			})
		})
		if c := f.TelegramCommands(); c[0].Description == "" || c[1].Description == "" {
			t.Fatalf("webhook=%v: %+v", webhook, c)
		}
		time.Sleep(200 * time.Millisecond)
		if n := f.CommandRegistrations(); n != 1 {
			t.Fatalf("webhook=%v: setMyCommands called %d times in one start, want 1", webhook, n)
		}
		noFakeErrors(t, f)
	}
}

// A Bot API that fails setMyCommands for a while neither holds updates
// back nor is given up on: the call is retried until it goes through.
func TestCommandRegistrationIsRetriedWithoutHoldingUpdates(t *testing.T) {
	f := telegramtest.NewTelegram(t, telegramtest.TelegramOptions{})
	target, _ := url.Parse(f.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a poll cut short when the test ends
	var refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/setMyCommands") && refused.Add(1) <= 3 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"ok":false,"error_code":502,"description":"Bad Gateway"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a, err := telegram.New(telegram.Config{Token: f.Token, APIURL: srv.URL, PollTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(adaptertest.LogWriter(t), nil))})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	up := f.Say("alice", "alice", "hi", false)
	s.received(t, up)
	adaptertest.Eventually(t, "registered after the failures", func() bool { return len(f.Commands()) > 0 })
	if n := refused.Load(); n != 4 || f.CommandRegistrations() != 1 {
		t.Fatalf("setMyCommands tried %d times, accepted %d times; want 4 and 1", n, f.CommandRegistrations())
	}
	noFakeErrors(t, f)
}

// "/grants" and "/grants@<this bot>" are commands; "/grants@otherbot",
// other commands and a "/grants" without its bot_command entity are
// ordinary messages.
func TestCommandsAddressedToUsOnly(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	revoke := chat.ButtonData("gr_1", chat.ChoiceRevokeGrant)
	s.commandReply = func(name string, in gh.Inbound) chat.CommandReply {
		return chat.CommandReply{Text: "Grants <b>& " + strconv.Quote(in.Text) + "</b> **x**",
			Buttons: []chat.Button{{Label: "Revoke post_note", Data: revoke, Style: "danger"}}}
	}
	adaptertest.Connect(t, a, s, 5*time.Second)

	other := f.SayCommand("group-ops", "alice", "/grants@otherbot")
	if in := s.received(t, other); in.Text != "/grants@otherbot" || in.UserID != f.UserID("alice") {
		t.Fatalf("a command to another bot is an ordinary message: %+v", in)
	}
	help := f.SayCommand("group-ops", "alice", "/help me")
	if in := s.received(t, help); in.Text != "/help me" {
		t.Fatalf("a command the gateway does not answer is an ordinary message: %+v", in)
	}
	plain := f.Say("group-ops", "alice", "/grants", false)
	if in := s.received(t, plain); in.Text != "/grants" {
		t.Fatalf("/grants without its bot_command entity: %+v", in)
	}

	ours := f.SayCommand("group-ops", "alice", "/grants@GateHouse_Bot  soon please ")
	c := s.commanded(t, ours)
	if c.name != chat.CommandGrants || c.in.Text != "soon please" || c.in.ChatID != f.ChatID("group-ops") ||
		c.in.ChatType != gh.ChatGroup || c.in.UserID != f.UserID("alice") || c.in.MessageID == "" {
		t.Fatalf("/grants@our bot: %+v", c)
	}
	bare := f.SayCommand("group-ops", "bob", "/grants")
	if c := s.commanded(t, bare); c.name != chat.CommandGrants || c.in.Text != "" || c.in.UserName != "bob" {
		t.Fatalf("/grants: %+v", c)
	}
	for _, up := range []string{other, help, plain, ours, bare} {
		adaptertest.Eventually(t, "update "+up+" acknowledged", func() bool { return f.Acked(up) })
	}

	// Each command is answered by a reply to it, escaped (plain text,
	// nothing read as markup), with the answer's buttons.
	var answers []telegramtest.TelegramMessage
	adaptertest.Eventually(t, "two answers", func() bool {
		answers = f.TelegramMessages("group-ops")
		return len(answers) == 2
	})
	for i, up := range []string{ours, bare} {
		m := answers[i]
		want := "Grants <b>& " + strconv.Quote(s.commanded(t, up).in.Text) + "</b> **x**"
		if m.Text != want || m.ParseMode != "HTML" || strconv.Itoa(m.ReplyTo) != s.commanded(t, up).in.MessageID || !m.LinkPreviewDisabled {
			t.Fatalf("answer %d: %+v, want text %q as a reply to %s", i, m, want, s.commanded(t, up).in.MessageID)
		}
		if len(m.Buttons) != 1 || len(m.Buttons[0]) != 1 || m.Buttons[0][0].Data != revoke || m.Buttons[0][0].Text != "Revoke post_note" {
			t.Fatalf("answer %d's buttons: %+v", i, m.Buttons)
		}
	}
	// The Revoke button is pressed like a card's.
	s.pressResult = chat.PressResult{Won: true, Text: "Revoked."}
	if reply, err := f.Press("group-ops", strconv.Itoa(answers[0].ID), revoke, "alice"); err != nil || reply != "Revoked." {
		t.Fatalf("Revoke: %q %v", reply, err)
	}
	if p := s.pressList(); len(p) != 1 || p[0].Choice != chat.ChoiceRevokeGrant || p[0].GateID != "gr_1" {
		t.Fatalf("presses %+v", p)
	}
	noFakeErrors(t, f)
}

// In a forum topic the answer stays in the topic.
func TestCommandInTopic(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{Webhook: true})
	s := newSink()
	adaptertest.Connect(t, a, s, 5*time.Second)
	s.received(t, f.SayInTopic("forum-dev", 7, "alice", "hello"))
	m := f.Message("forum-dev", "alice")
	m["message_thread_id"], m["is_topic_message"] = 7, true
	m["text"], m["entities"] = "/grants", []map[string]any{{"type": "bot_command", "offset": 0, "length": 7}}
	up := f.Inject(map[string]any{"message": m})
	c := s.commanded(t, up)
	if c.in.ThreadID != "7" {
		t.Fatalf("command in a topic: %+v", c.in)
	}
	var answer telegramtest.TelegramMessage
	adaptertest.Eventually(t, "the answer", func() bool {
		msgs := f.TelegramMessages("forum-dev")
		if len(msgs) == 1 {
			answer = msgs[0]
		}
		return len(msgs) == 1
	})
	if answer.ThreadID != 7 || strconv.Itoa(answer.ReplyTo) != c.in.MessageID || answer.Text != `/grants with ""` {
		t.Fatalf("answer in the topic: %+v", answer)
	}
	noFakeErrors(t, f)
}

// A command is acknowledged only once Command returned nil; a refused or
// duplicate command is acknowledged and answered with nothing.
func TestCommandAcknowledgedAfterCommandAndAnsweredAsTold(t *testing.T) {
	a, f := telegramtest.NewTelegramAdapter(t, telegramtest.TelegramOptions{})
	s := newSink()
	failed := false
	s.failCommand = func(gh.Inbound) error {
		if !failed {
			failed = true
			return errors.New("database is down")
		}
		return nil
	}
	s.commandReply = func(_ string, in gh.Inbound) chat.CommandReply {
		switch in.UserName {
		case "mallory":
			return chat.CommandReply{Text: "You are not allowed to use Gatehouse here.", Refused: true}
		case "again":
			return chat.CommandReply{Duplicate: true}
		}
		return chat.CommandReply{Text: "No grants are active in this chat."}
	}
	adaptertest.Connect(t, a, s, 5*time.Second)

	first := f.SayCommand("alice", "alice", "/grants")
	after := f.Say("alice", "alice", "after", false)
	calls := []string{s.nextCall(t), s.nextCall(t), s.nextCall(t)}
	if want := []string{first, first, after}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v: a failed command comes again before what follows it", calls, want)
	}
	adaptertest.Eventually(t, "both acknowledged", func() bool { return f.Acked(first) && f.Acked(after) })
	if msgs := f.TelegramMessages("alice"); len(msgs) != 1 || msgs[0].Text != "No grants are active in this chat." {
		t.Fatalf("one answer, after the command went through: %+v", msgs)
	}

	refused := f.SayCommand("group-x", "mallory", "/grants")
	dup := f.SayCommand("group-x", "again", "/grants")
	s.commanded(t, refused)
	s.commanded(t, dup)
	adaptertest.Eventually(t, "refused and duplicate acknowledged", func() bool { return f.Acked(refused) && f.Acked(dup) })
	if msgs := f.TelegramMessages("group-x"); len(msgs) != 0 {
		t.Fatalf("a refused or duplicate command was answered: %+v", msgs)
	}
	noFakeErrors(t, f)
}

// With the whole gateway: a stranger's /grants is logged as not allowed
// and answered with nothing; a member's is logged as a command and
// answered.
func TestStrangersGrantsCommandIsLoggedNotAnswered(t *testing.T) {
	var fake *telegramtest.TelegramFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := telegramtest.NewTelegramAdapter(tb, telegramtest.TelegramOptions{})
		fake = f
		return a, f
	}, stacktest.EnvOptions{Allowed: []string{"alice"}})

	stranger := fake.SayCommand("group-ops", "mallory", "/grants")
	row := e.Receive(stranger)
	if row.Outcome != chat.ReceiveDropped || row.Reason != chat.ReasonNotAllowed || row.UserID != fake.UserID("mallory") {
		t.Fatalf("the stranger's /grants in the receive log: %+v", row)
	}
	// alice's command comes after mallory's, and updates are handled in
	// order: once hers is answered, his was handled.
	answer, err := fake.Command("group-ops", "alice", chat.CommandGrants)
	if err != nil || answer.Text == "" || len(answer.Buttons) != 0 {
		t.Fatalf("a member's /grants: %+v %v", answer, err)
	}
	if msgs := fake.Messages("group-ops"); len(msgs) != 1 || msgs[0].ID != answer.ID {
		t.Fatalf("the bot answered the stranger: %+v", msgs)
	}
	if !fake.Acked(stranger) {
		t.Fatal("the stranger's command was not acknowledged")
	}
	rows, err := e.Store.ListReceive(e.Ctx, store.ReceiveFilter{Platform: gh.PlatformTelegram, Reason: chat.ReasonCommand, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].UserID != fake.UserID("alice") || rows[0].Text != "/grants" {
		t.Fatalf("the member's /grants in the receive log: %+v %v", rows, err)
	}
	noFakeErrors(t, fake)
}

// The whole round through the gateway: "Approve for this chat" grants,
// /grants lists the grant with a Revoke button, its press revokes it, and
// /grants then lists none.
func TestGrantsCommandListsAndRevokes(t *testing.T) {
	var fake *telegramtest.TelegramFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := telegramtest.NewTelegramAdapter(tb, telegramtest.TelegramOptions{})
		fake = f
		return a, f
	}, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}, GrantableNotes: true})
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_post", Name: "post_note", Arguments: `{"text":"The report is ready."}`}}},
		modeltest.Reply{Text: "Posted once."})
	fake.Say("group-room", "alice", "post that the report is ready", false)
	var card adaptertest.Message
	e.Eventually("the card", func() bool {
		for _, m := range fake.Messages("group-room") {
			if len(m.Buttons) >= 2 {
				card = m
				return true
			}
		}
		return false
	})
	forChat := buttonOf(t, card, chat.ChoiceApproveChat)
	if reply, err := fake.Press("group-room", card.ID, forChat, "alice"); err != nil || !strings.Contains(reply, "Approved for this chat") {
		t.Fatalf("Approve for this chat: %q %v", reply, err)
	}
	e.Eventually("the card edited to its outcome", func() bool {
		for _, m := range fake.Messages("group-room") {
			if m.ID == card.ID {
				return strings.Contains(m.Text, "Approved for this chat by alice") && len(m.Buttons) == 0
			}
		}
		return false
	})
	var notice adaptertest.Message
	e.Eventually("the grant's notice", func() bool {
		for _, m := range fake.Messages("group-room") {
			if strings.Contains(m.Text, "approved post_note for this chat") {
				notice = m
				return true
			}
		}
		return false
	})
	grantID, _, _ := chat.ParseButtonData(buttonOf(t, notice, chat.ChoiceRevokeGrant))

	list, err := fake.Command("group-room", "bob", chat.CommandGrants)
	if err != nil || !strings.Contains(list.Text, "post_note") || !strings.Contains(list.Text, grantID) {
		t.Fatalf("/grants must list grant %s: %+v %v", grantID, list, err)
	}
	revoke := buttonOf(t, list, chat.ChoiceRevokeGrant)
	if reply, err := fake.Press("group-room", list.ID, revoke, "bob"); err != nil || !strings.Contains(reply, "Revoked") {
		t.Fatalf("Revoke from /grants: %q %v", reply, err)
	}
	if g, err := e.Store.GetGrant(e.Ctx, grantID); err != nil || g.RevokedAt.IsZero() {
		t.Fatalf("the grant is not revoked: %+v %v", g, err)
	}
	if list, err := fake.Command("group-room", "alice", chat.CommandGrants); err != nil || !strings.Contains(list.Text, "No grants") || len(list.Buttons) != 0 {
		t.Fatalf("/grants after the revocation: %+v %v", list, err)
	}
	noFakeErrors(t, fake)
}

func buttonOf(t *testing.T, m adaptertest.Message, choice string) string {
	t.Helper()
	for _, b := range m.Buttons {
		if _, c, ok := chat.ParseButtonData(b); ok && c == choice {
			return b
		}
	}
	t.Fatalf("no %s button on %+v", choice, m)
	return ""
}
