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

// "Deny with reason…" on a pending card asks someone who may decide for
// the reason, and decides nothing; a named approver's denial carries the
// reason, cut to MaxReason, onto the card; later, it hears the decision.
func TestPressRules(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Allowed: []string{"alice", "bob"}, Approvers: []string{"carol"}})
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text":"x"}`}}}, modeltest.Reply{Text: "Posted."})
	e.Fake.Say("alice", "alice", "post it", false)
	var id string
	e.Eventually("the card", func() bool {
		for _, m := range fake.Messages("alice") {
			for _, b := range m.Buttons {
				if g, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceDenyReason {
					id = g
				}
			}
		}
		return id != ""
	})
	press := func(user, choice, reason string) chat.PressResult {
		t.Helper()
		res, err := e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q-" + user + choice, GateID: id, Choice: choice,
			UserID: e.Fake.UserID(user), UserName: user, ChatID: fake.ChatID("alice"), Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := press("bob", chat.ChoiceDenyReason, ""); res.AskReason || !strings.Contains(res.Text, "cannot decide") {
		t.Fatalf("bob asking to deny with a reason: %+v", res)
	}
	if res := press("alice", chat.ChoiceDenyReason, ""); !res.AskReason || res.Won || res.Gate.State != gh.GatePending {
		t.Fatalf("alice asking to deny with a reason: %+v", res)
	}
	if g, _ := e.Store.GetGate(e.Ctx, id); g.State != gh.GatePending {
		t.Fatalf("asking for a reason decided the gate: %+v", g)
	}
	long := strings.Repeat("r", chat.MaxReason+50)
	res := press("carol", chat.ChoiceDeny, "  "+long+"  ")
	if !res.Won || res.Gate.State != gh.GateDenied || len([]rune(res.Gate.Reason)) != chat.MaxReason || !strings.Contains(res.Card.Text, "Reason: rrr") {
		t.Fatalf("carol's denial with a reason: %+v", res)
	}
	if res := press("alice", chat.ChoiceDenyReason, ""); res.AskReason || !strings.Contains(res.Text, "Already decided") {
		t.Fatalf("asking for a reason after the decision: %+v", res)
	}
}
