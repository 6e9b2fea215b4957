package gateway_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// /grants and the Revoke button, at the gateway: who may list and revoke,
// from which chat, what the receive log keeps, and that a redelivered
// command is answered once.
func TestGrantsCommandAndRevokePress(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}, GrantableNotes: true})
	session(e, "bob")
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text":"x"}`}}}, modeltest.Reply{Text: "Posted."})
	e.Fake.Say("alice", "alice", "post it", false)
	var gateID string
	e.Eventually("the card", func() bool {
		for _, m := range fake.Messages("alice") {
			for _, b := range m.Buttons {
				if id, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceApproveChat {
					gateID = id
				}
			}
		}
		return gateID != ""
	})
	alice := func(update string) gh.Inbound {
		return gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: update, ChatID: fake.ChatID("alice"), UserID: e.Fake.UserID("alice"), UserName: "alice", MessageID: "7"}
	}
	res, err := e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q1", GateID: gateID, Choice: chat.ChoiceApproveChat,
		UserID: e.Fake.UserID("alice"), UserName: "alice", ChatID: fake.ChatID("alice")})
	if err != nil || !res.Won || res.Text != "Approved for this chat." {
		t.Fatalf("approve for this chat: %+v %v", res, err)
	}
	e.Eventually("the grant", func() bool {
		list, _ := e.Store.ListGrants(e.Ctx, "", true, time.Now(), 10)
		return len(list) == 1
	})
	list, _ := e.Store.ListGrants(e.Ctx, "", true, time.Now(), 10)
	grant := list[0]

	// A stranger is refused and logged as such; nothing is listed to them.
	stranger := alice("u-stranger")
	stranger.UserID, stranger.UserName = "424242", "mallory"
	reply, err := e.Gateway.Command(e.Ctx, chat.CommandGrants, stranger)
	if err != nil || !reply.Refused || strings.Contains(reply.Text, grant.ID) {
		t.Fatalf("a stranger's /grants: %+v %v", reply, err)
	}
	if row := e.Receive("u-stranger"); row.Reason != chat.ReasonNotAllowed {
		t.Fatalf("a stranger's /grants in the receive log: %+v", row)
	}

	reply, err = e.Gateway.Command(e.Ctx, chat.CommandGrants, alice("u-list"))
	if err != nil || reply.Refused || !strings.Contains(reply.Text, grant.ID) || len(reply.Buttons) != 1 {
		t.Fatalf("alice's /grants: %+v %v", reply, err)
	}
	if id, c, ok := chat.ParseButtonData(reply.Buttons[0].Data); !ok || c != chat.ChoiceRevokeGrant || id != grant.ID {
		t.Fatalf("the listing's button must revoke %s: %+v", grant.ID, reply.Buttons[0])
	}
	row := e.Receive("u-list")
	if row.Outcome != chat.ReceiveDropped || row.Reason != chat.ReasonCommand || !strings.Contains(row.Detail, "1 listed") {
		t.Fatalf("/grants in the receive log: %+v", row)
	}
	if again, err := e.Gateway.Command(e.Ctx, chat.CommandGrants, alice("u-list")); err != nil || !again.Duplicate {
		t.Fatalf("a redelivered /grants must not be answered twice: %+v %v", again, err)
	}
	if unknown, err := e.Gateway.Command(e.Ctx, "frobnicate", alice("u-unknown")); err != nil || !strings.Contains(unknown.Text, "/grants") {
		t.Fatalf("an unknown command: %+v %v", unknown, err)
	}
	// What follows a command is logged as a message's text is: without
	// NUL, as valid UTF-8.
	odd := alice("u-odd")
	odd.Text = "now\x00 please \xff"
	if _, err := e.Gateway.Command(e.Ctx, chat.CommandGrants, odd); err != nil {
		t.Fatalf("a command with odd text: %v", err)
	}
	if row := e.Receive("u-odd"); strings.ContainsRune(row.Text, 0) || !utf8.ValidString(row.Text) || !strings.HasPrefix(row.Text, "/grants now") {
		t.Fatalf("the command's text in the receive log: %q", row.Text)
	}
	// bob's chat has none; a Revoke of alice's grant from bob's chat does nothing.
	bobs := alice("u-bob")
	bobs.ChatID, bobs.UserID, bobs.UserName = fake.ChatID("bob"), e.Fake.UserID("bob"), "bob"
	if r, err := e.Gateway.Command(e.Ctx, chat.CommandGrants, bobs); err != nil || !strings.Contains(r.Text, "No grants") {
		t.Fatalf("bob's chat lists another chat's grant: %+v %v", r, err)
	}
	revoke := gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q2", GateID: grant.ID, Choice: chat.ChoiceRevokeGrant,
		UserID: e.Fake.UserID("bob"), UserName: "bob", ChatID: fake.ChatID("bob")}
	if res, err := e.Gateway.Press(e.Ctx, revoke); err != nil || res.Won || !strings.Contains(res.Text, "not one of this chat") {
		t.Fatalf("a revoke from another chat: %+v %v", res, err)
	}
	revoke.UserID, revoke.UserName, revoke.ChatID = "424242", "mallory", fake.ChatID("alice")
	if res, err := e.Gateway.Press(e.Ctx, revoke); err != nil || res.Won || !strings.Contains(res.Text, "not allowed") {
		t.Fatalf("a stranger's revoke: %+v %v", res, err)
	}
	if g, _ := e.Store.GetGrant(e.Ctx, grant.ID); !g.RevokedAt.IsZero() {
		t.Fatalf("refused revokes revoked the grant: %+v", g)
	}
	// bob, a member of alice's chat (the chat is the rule, as for cards).
	revoke.UserID, revoke.UserName = e.Fake.UserID("bob"), "bob"
	if res, err := e.Gateway.Press(e.Ctx, revoke); err != nil || !res.Won || !strings.Contains(res.Text, "Revoked") {
		t.Fatalf("bob's revoke in alice's chat: %+v %v", res, err)
	}
	if res, err := e.Gateway.Press(e.Ctx, revoke); err != nil || res.Won || !strings.Contains(res.Text, "Already revoked by bob") {
		t.Fatalf("a second revoke: %+v %v", res, err)
	}
	revoke.GateID = "gr_nope"
	if res, err := e.Gateway.Press(e.Ctx, revoke); err != nil || res.Won || !strings.Contains(res.Text, "no longer exists") {
		t.Fatalf("an unknown grant: %+v %v", res, err)
	}
	if g, _ := e.Store.GetGrant(e.Ctx, grant.ID); g.RevokedBy != "bob" {
		t.Fatalf("the revocation must record bob: %+v", g)
	}
	e.Eventually("the chat hears the revocation", func() bool {
		for _, m := range fake.Messages("alice") {
			if strings.Contains(m.Text, "was revoked by bob") {
				return true
			}
		}
		return false
	})
}
