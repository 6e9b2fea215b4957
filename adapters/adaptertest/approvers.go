package adaptertest

import (
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// Who may decide a card, and denying with a reason, as people on the
// platform meet them.

// button is the data of card m's button for choice.
func (e *env) button(m Message, choice string) string {
	e.T.Helper()
	for _, b := range m.Buttons {
		if _, c, ok := chat.ParseButtonData(b); ok && c == choice {
			return b
		}
	}
	e.T.Fatalf("card has no %s button: %+v", choice, m)
	return ""
}

// gateOf is the gate of card m, as the store has it now.
func (e *env) gateOf(m Message) gh.Gate {
	e.T.Helper()
	id, _, ok := chat.ParseButtonData(e.button(m, chat.ChoiceApprove))
	if !ok {
		e.T.Fatalf("card %+v has no gate", m)
	}
	g, err := e.Store.GetGate(e.Ctx, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return g
}

// In a group, a second member's press is refused with who can decide
// instead, and decides nothing; the requester's press wins.
func testOnlyTheRequesterDecides(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}})
	askToPost(e, "Posted for alice.")
	e.Fake.Say("room", "alice", "post that the report is ready", false)
	card, approve, _ := e.card("room")
	reply, err := e.Fake.Press("room", card.ID, approve, "bob")
	if err != nil || !strings.Contains(reply, "cannot decide") || !strings.Contains(reply, "the person who asked") {
		t.Fatalf("another member's press must be told who can decide: %q %v", reply, err)
	}
	if g := e.gateOf(card); g.State != gh.GatePending || e.Posted() != 0 {
		t.Fatalf("another member's press decided the card: %+v, posted %d", g, e.Posted())
	}
	reply, err = e.Fake.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the requester's press: %q %v", reply, err)
	}
	e.reply("room", "Posted for alice.")
	e.Eventually("the card edited to alice's approval", func() bool {
		c := e.cardNow("room", card.ID)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved by")
	})
	if n := e.Posted(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	e.noFakeErrors()
}

// An approver named in GATEHOUSE_APPROVERS decides another person's card,
// even off the allow-list; an allowed member who is not named does not.
func testNamedApproverDecides(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}, Approvers: []string{"carol"}})
	askToPost(e, "Posted, carol approved.")
	e.Fake.Say("room", "alice", "post it", false)
	card, approve, _ := e.card("room")
	reply, err := e.Fake.Press("room", card.ID, approve, "bob")
	if err != nil || !strings.Contains(reply, "cannot decide") || !strings.Contains(reply, e.Fake.UserID("carol")) {
		t.Fatalf("bob must be told carol can decide: %q %v", reply, err)
	}
	reply, err = e.Fake.Press("room", card.ID, approve, "carol")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the named approver's press: %q %v", reply, err)
	}
	e.reply("room", "Posted, carol approved.")
	if g := e.gateOf(card); g.State != gh.GateApproved || g.DecidedBy != "carol" && g.DecidedBy != e.Fake.UserID("carol") {
		t.Fatalf("decided by %q, want carol: %+v", g.DecidedBy, g)
	}
	e.noFakeErrors()
}

// GATEHOUSE_APPROVERS=allowed keeps the rule from before: anyone allowed
// in the card's chat decides.
func testAllowedKeepsTheOldRule(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}, ApproversAllowed: true})
	askToPost(e, "Posted, bob approved.")
	e.Fake.Say("room", "alice", "post it", false)
	card, approve, _ := e.card("room")
	reply, err := e.Fake.Press("room", card.ID, approve, "bob")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("under the old rule bob decides: %q %v", reply, err)
	}
	e.reply("room", "Posted, bob approved.")
	if reply, _ := e.Fake.Press("room", card.ID, approve, "mallory"); !strings.Contains(strings.ToLower(reply), "not allowed") {
		t.Fatalf("a stranger is still refused: %q", reply)
	}
	e.noFakeErrors()
}

// Every card is also sent to the approval chat; a decision there wins,
// and both copies are edited to it.
func testApprovalChatCopy(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice"}, Approvers: []string{"carol"}, ApprovalChat: "group-approvers"})
	askToPost(e, "Posted from the approvers' chat.")
	e.Fake.Say("room", "alice", "post it", false)
	card, _, _ := e.card("room")
	copyCard, approve, _ := e.card("group-approvers")
	if copyCard.Text != card.Text {
		t.Fatalf("the copy must show the same card:\n%q\n%q", copyCard.Text, card.Text)
	}
	reply, err := e.Fake.Press("group-approvers", copyCard.ID, approve, "carol")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the approver's press in the approval chat: %q %v", reply, err)
	}
	e.reply("room", "Posted from the approvers' chat.")
	for chat, id := range map[string]string{"room": card.ID, "group-approvers": copyCard.ID} {
		e.Eventually("the card in "+chat+" edited to the outcome", func() bool {
			c := e.cardNow(chat, id)
			return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved by")
		})
	}
	// The requester's press in the session's chat now hears the decision.
	if reply, err := e.Fake.Press("room", card.ID, e.button(card, chat.ChoiceApprove), "alice"); err != nil || !strings.Contains(strings.ToLower(reply), "already") {
		t.Fatalf("a press after the decision: %q %v", reply, err)
	}
	if n := e.Posted(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	if n := len(e.Fake.Messages("group-approvers")); n != 1 {
		t.Fatalf("the approval chat got %d messages, want the one card", n)
	}
	e.noFakeErrors()
}

// "Deny with reason…": the platform asks for the reason, the person gives
// it, the card shows it and the model reads it.
func testDenyWithReason(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}})
	const reason = "Not today: the report is not final."
	askToPost(e, "Understood, not posted.")
	e.Fake.Say("room", "alice", "post it", false)
	card, _, _ := e.card("room")
	withReason := e.button(card, chat.ChoiceDenyReason)
	// Someone who may not decide is told so, and asked nothing.
	reply, err := e.Fake.DenyWithReason("room", card.ID, withReason, "bob", "because")
	if err != nil || !strings.Contains(reply, "cannot decide") {
		t.Fatalf("bob's deny with a reason: %q %v", reply, err)
	}
	if g := e.gateOf(card); g.State != gh.GatePending {
		t.Fatalf("bob's reason decided the card: %+v", g)
	}
	if _, err := e.Fake.DenyWithReason("room", card.ID, withReason, "alice", reason); err != nil {
		t.Fatalf("alice's deny with a reason: %v", err)
	}
	e.reply("room", "Understood, not posted.")
	g := e.gateOf(card)
	if g.State != gh.GateDenied || g.Reason != reason {
		t.Fatalf("the gate: %+v", g)
	}
	e.Eventually("the card edited to the denial and its reason", func() bool {
		c := e.cardNow("room", card.ID)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Denied by") && strings.Contains(c.Text, "Reason: "+reason)
	})
	if !toolResultSaid(e.Model.Requests(), reason) {
		t.Fatalf("the model was never told the reason %q", reason)
	}
	if e.Posted() != 0 {
		t.Fatal("a denied tool ran")
	}
	e.noFakeErrors()
}

// toolResultSaid reports whether a request to the model carried a tool
// result containing s.
func toolResultSaid(reqs []modeltest.Request, s string) bool {
	for _, r := range reqs {
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		for _, m := range body.Messages {
			if m.Role == "tool" && strings.Contains(string(m.Content), s) {
				return true
			}
		}
	}
	return false
}
