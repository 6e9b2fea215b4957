package adaptertest

import (
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// "Approve for this chat" as people on the platform meet it: the press
// grants, the grant's notice carries a Revoke button, a later call within
// the bound runs with no card, /grants lists the grant with a Revoke
// button, and a revoked grant asks again.
func testGrantInTheChat(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}, GrantableNotes: true})
	askToPost(e, "Posted once.")
	// One conversation (on Slack, one thread: the thread is the session
	// the grant covers); /grants in the channel lists it all the same.
	_, say := e.ask("room", "alice", "post that the report is ready")
	card, _, _ := e.card("room")
	forChat := e.button(card, chat.ChoiceApproveChat)
	reply, err := e.Fake.Press("room", card.ID, forChat, "alice")
	if err != nil || !strings.Contains(reply, "Approved for this chat") {
		t.Fatalf("the press of Approve for this chat: %q %v", reply, err)
	}
	e.reply("room", "Posted once.")
	notice := e.reply("room", "approved post_note for this chat")
	noticeRevoke := e.button(notice, chat.ChoiceRevokeGrant)
	grantID, _, _ := chat.ParseButtonData(noticeRevoke)
	if g, err := e.Store.GetGrant(e.Ctx, grantID); err != nil || !g.Active(g.Created) || g.Tool != "post_note" {
		t.Fatalf("the notice's Revoke button names grant %q: %+v %v", grantID, g, err)
	}

	// The same note again: no card, one more run, the answer says why.
	askToPost(e, "Posted twice.")
	say("alice", "post it again")
	e.reply("room", "Posted twice.")
	e.reply("room", "ran without a card")
	if n := e.Posted(); n != 2 {
		t.Fatalf("post_note ran %d times, want 2 (once approved, once under the grant)", n)
	}
	if n := e.cardsIn("room"); n != 1 {
		t.Fatalf("%d cards in the chat, want the first one only", n)
	}

	// /grants lists it; bob, a member, revokes it from the listing.
	list, err := e.Fake.Command("room", "bob", chat.CommandGrants)
	if err != nil || !strings.Contains(list.Text, "post_note") || !strings.Contains(list.Text, grantID) {
		t.Fatalf("/grants must list the grant %s: %+v %v", grantID, list, err)
	}
	revoke := e.button(list, chat.ChoiceRevokeGrant)
	if reply, err := e.Fake.Press("room", list.ID, revoke, "bob"); err != nil || !strings.Contains(reply, "Revoked") {
		t.Fatalf("the press of Revoke in /grants: %q %v", reply, err)
	}
	e.reply("room", "was revoked by")
	if g, err := e.Store.GetGrant(e.Ctx, grantID); err != nil || g.RevokedAt.IsZero() {
		t.Fatalf("the grant is not revoked: %+v %v", g, err)
	}
	// The notice's button now hears that it is done.
	if reply, err := e.Fake.Press("room", notice.ID, noticeRevoke, "alice"); err != nil || !strings.Contains(reply, "Already revoked") {
		t.Fatalf("a second Revoke: %q %v", reply, err)
	}
	if list, err := e.Fake.Command("room", "alice", chat.CommandGrants); err != nil || !strings.Contains(list.Text, "No grants") || len(list.Buttons) != 0 {
		t.Fatalf("/grants after the revocation: %+v %v", list, err)
	}

	// Revoked: the same note asks again.
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_post3", Name: "post_note", Arguments: `{"text":"The report is ready."}`}}},
		modeltest.Reply{Text: "Posted a third time."})
	say("alice", "and once more")
	e.Eventually("a new card after the revocation", func() bool { return e.cardsIn("room") == 2 })
	if n := e.Posted(); n != 2 {
		t.Fatalf("post_note ran %d times with its grant revoked and no approval", n)
	}
	var events []gh.Kind
	evs, _ := e.Kernel.Events(e.Ctx, e.gateOf(card).SessionID, 0, 1000)
	for _, ev := range evs {
		if ev.Kind == gh.KindGrantCreated || ev.Kind == gh.KindGrantRevoked {
			events = append(events, ev.Kind)
		}
	}
	if len(events) != 2 || events[0] != gh.KindGrantCreated || events[1] != gh.KindGrantRevoked {
		t.Fatalf("the log must hold one grant.created then one grant.revoked: %v", events)
	}
	e.noFakeErrors()
}

// cardsIn counts the approval cards the bot sent to chat (pending or
// decided): messages with an Approve button now, or edited to a decision.
func (e *env) cardsIn(chatName string) int {
	n := 0
	for _, m := range e.Fake.Messages(chatName) {
		pending := false
		for _, b := range m.Buttons {
			if _, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceApprove {
				pending = true
			}
		}
		if pending || strings.Contains(m.Text, "Approved by") || strings.Contains(m.Text, "Approved for this chat by") || strings.Contains(m.Text, "Denied by") {
			n++
		}
	}
	return n
}
