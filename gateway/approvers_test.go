package gateway_test

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/internal/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

func TestParseApprovers(t *testing.T) {
	r, err := gateway.ParseApprovers(" telegram:111 , Slack:U012,telegram:111,", "telegram", "slack")
	if err != nil || r.Allowed || len(r.Users) != 2 || r.Users[0] != (gateway.Approver{Platform: "telegram", UserID: "111"}) ||
		r.Users[1] != (gateway.Approver{Platform: "slack", UserID: "U012"}) {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err := gateway.ParseApprovers("Allowed"); err != nil || !r.Allowed || len(r.Users) != 0 {
		t.Fatalf("allowed: %+v %v", r, err)
	}
	if r, err := gateway.ParseApprovers(""); err != nil || r.Allowed || len(r.Users) != 0 {
		t.Fatalf("empty: %+v %v", r, err)
	}
	for _, bad := range []string{"111", "telegram:", ":111", "telegram:1 1", "allowed,telegram:1", "icq:5"} {
		if _, err := gateway.ParseApprovers(bad, "telegram", "slack"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if gateway.ToolKey("email_send") != "EMAIL_SEND" || gateway.ToolKey("files__read-file") != "FILES__READ_FILE" {
		t.Fatal("tool keys")
	}
	a := gateway.Approvers{Default: gateway.ApproverRule{Allowed: true},
		Tools: map[string]gateway.ApproverRule{"EMAIL_SEND": {Users: []gateway.Approver{{Platform: "slack", UserID: "U1"}}}}}
	if !a.For("shell_exec").Allowed || a.For("email_send").Allowed || a.For("Email-Send").Users[0].UserID != "U1" {
		t.Fatalf("rules by tool: %+v", a)
	}
	if gateway.UserKey("telegram", "111") != "telegram:"+gateway.PseudonymousUserID("telegram", "111") {
		t.Fatal("user keys are the log's")
	}
}

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
				if g, c, ok := gateway.ParseButtonData(b); ok && c == gateway.ChoiceDenyReason {
					id = g
				}
			}
		}
		return id != ""
	})
	press := func(user, choice, reason string) gateway.PressResult {
		t.Helper()
		res, err := e.Gateway.Press(e.Ctx, gh.Press{Platform: gh.PlatformTelegram, UpdateID: "q-" + user + choice, GateID: id, Choice: choice,
			UserID: e.Fake.UserID(user), UserName: user, ChatID: fake.ChatID("alice"), Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := press("bob", gateway.ChoiceDenyReason, ""); res.AskReason || !strings.Contains(res.Text, "cannot decide") {
		t.Fatalf("bob asking to deny with a reason: %+v", res)
	}
	if res := press("alice", gateway.ChoiceDenyReason, ""); !res.AskReason || res.Won || res.Gate.State != gh.GatePending {
		t.Fatalf("alice asking to deny with a reason: %+v", res)
	}
	if g, _ := e.Store.GetGate(e.Ctx, id); g.State != gh.GatePending {
		t.Fatalf("asking for a reason decided the gate: %+v", g)
	}
	long := strings.Repeat("r", gateway.MaxReason+50)
	res := press("carol", gateway.ChoiceDeny, "  "+long+"  ")
	if !res.Won || res.Gate.State != gh.GateDenied || len([]rune(res.Gate.Reason)) != gateway.MaxReason || !strings.Contains(res.Card.Text, "Reason: rrr") {
		t.Fatalf("carol's denial with a reason: %+v", res)
	}
	if res := press("alice", gateway.ChoiceDenyReason, ""); res.AskReason || !strings.Contains(res.Text, "Already decided") {
		t.Fatalf("asking for a reason after the decision: %+v", res)
	}
}
