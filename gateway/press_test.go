package gateway_test

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// A press decides only from the chat whose gate it is: a button's data
// replayed from another chat, by an allowed user, decides nothing.
func TestPressFromAnotherChatDecidesNothing(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}})
	session(e, "bob")
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text":"x"}`}}}, modeltest.Reply{Text: "Posted."})
	e.Fake.Say("alice", "alice", "post it", false)
	var data string
	e.Eventually("the card", func() bool {
		for _, m := range fake.Messages("alice") {
			for _, b := range m.Buttons {
				if _, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceApprove {
					data = b
				}
			}
		}
		return data != ""
	})
	id, _, _ := chat.ParseButtonData(data)
	res, err := e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q1", GateID: id, Choice: chat.ChoiceApprove,
		UserID: e.Fake.UserID("bob"), UserName: "bob", ChatID: fake.ChatID("bob"), MessageID: "1"})
	if err != nil || res.Won || !strings.Contains(res.Text, "not one this chat was sent") {
		t.Fatalf("press from another chat: %+v %v", res, err)
	}
	g, _ := e.Store.GetGate(e.Ctx, id)
	if g.State != gh.GatePending || e.Posted.Load() != 0 {
		t.Fatalf("the gate was decided from the wrong chat: %+v, posted %d", g, e.Posted.Load())
	}
	// From its own chat, even before the card's message id is known.
	res, err = e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q2", GateID: id, Choice: chat.ChoiceDeny,
		UserID: e.Fake.UserID("alice"), UserName: "alice", ChatID: fake.ChatID("alice"), MessageID: "999"})
	if err != nil || !res.Won || res.Gate.State != gh.GateDenied || !strings.Contains(res.Card.Text, "Denied by alice") || len(res.Card.Buttons) != 0 {
		t.Fatalf("press from the gate's chat: %+v %v", res, err)
	}
	// Forged button data is answered, never an error: an error would make
	// the platform deliver the press again and hold up the chat.
	for _, forged := range []string{"\x00evil", strings.Repeat("g", 300), "g_ü"} {
		res, err = e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "qf", GateID: forged, Choice: chat.ChoiceApprove,
			UserID: e.Fake.UserID("alice"), ChatID: fake.ChatID("alice")})
		if err != nil || res.Won {
			t.Fatalf("forged gate id %q: %+v %v", forged, res, err)
		}
	}
	res, err = e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "qc", GateID: id, Choice: "option:0",
		UserID: e.Fake.UserID("alice"), ChatID: fake.ChatID("alice")})
	if err != nil || res.Won {
		t.Fatalf("an option on an approval card: %+v %v", res, err)
	}
	// An unknown gate is answered, not an error the platform would retry.
	res, err = e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q3", GateID: "g_nope", Choice: chat.ChoiceApprove,
		UserID: e.Fake.UserID("alice"), ChatID: fake.ChatID("alice")})
	if err != nil || res.Won || !strings.Contains(res.Text, "no longer exists") {
		t.Fatalf("unknown gate: %+v %v", res, err)
	}
}
