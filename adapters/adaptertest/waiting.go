package adaptertest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// A message typed while a card is pending, as people on the platform meet
// it: told at once which card waits, answered at once in a turn of its own
// while the card still waits (#30); "cancel" from someone who may decide
// denies the card.

// waitingNotice is how the notice for a message typed under a pending
// card begins (cards.Waiting).
const waitingNotice = "A card is waiting for a decision: "

// threadSayer is a fake whose chats have threads a user can reply in
// (Slack: a top-level channel message starts a thread, and the thread is
// the session).
type threadSayer interface {
	SayInThread(chat, threadTS, user, text string, bot bool) (updateID string)
}

// ask says text in chat as user to start a conversation, and returns a
// function that says more in the same conversation (on a platform with
// threads, as a reply in the thread the first message started).
func (e *env) ask(chat, user, text string) (session string, sayMore func(user, text string) string) {
	e.T.Helper()
	row := e.Receive(e.Fake.Say(chat, user, text, false))
	return row.SessionID, func(user, text string) string {
		if ts, ok := e.Fake.(threadSayer); ok && row.ThreadID != "" {
			return ts.SayInThread(chat, row.ThreadID, user, text, false)
		}
		return e.Fake.Say(chat, user, text, false)
	}
}

// asked reports whether the model request r carried s anywhere.
func asked(r modeltest.Request, s string) bool { return strings.Contains(string(r.Body), s) }

// countIn counts the bot's messages in chat containing s.
func (e *env) countIn(chat, s string) int {
	n := 0
	for _, m := range e.Fake.Messages(chat) {
		if strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

// notices counts the session's notices of a kind.
func (e *env) notices(session, code string) int {
	e.T.Helper()
	evs, err := e.Kernel.Events(e.Ctx, session, 0, 10000)
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		var no gh.Notice
		if ev.Kind == gh.KindNotice && json.Unmarshal(ev.Payload, &no) == nil && no.Code == code {
			n++
		}
	}
	return n
}

// askToPostAside scripts a turn that asks for post_note, the answer of a
// message typed under its card, then the turn's own final answer.
func askToPostAside(e *env, aside, final string) {
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_post", Name: "post_note", Arguments: `{"text":"The report is ready."}`}}},
		modeltest.Reply{Text: aside}, modeltest.Reply{Text: final})
}

func testMessageWhileACardIsPending(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	askToPostAside(e, "Tomorrow will be sunny.", "Posted the note.")
	session, say := e.ask("room", "alice", "post that the report is ready")
	card, approve, _ := e.card("room")
	upd := say("alice", "and what is the weather tomorrow?")
	row := e.Receive(upd)
	if row.Outcome != chat.ReceiveHandedOn || row.SessionID != session {
		t.Fatalf("the message under the card: %+v", row)
	}
	notice := e.reply("room", waitingNotice)
	for _, want := range []string{"post_note", "The report is ready.", "above in this chat", "is answered now, in a turn of its own", `"cancel"`} {
		if !strings.Contains(notice.Text, want) {
			t.Fatalf("the notice %q does not say %q", notice.Text, want)
		}
	}
	// Answered while the card still waits, the model told of the card.
	e.reply("room", "Tomorrow will be sunny.")
	if g := e.gateOf(card); g.State != gh.GatePending {
		t.Fatalf("the card after the aside: %+v", g)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 2 || !asked(reqs[1], "weather") || !asked(reqs[1], "Waiting for a person") {
		t.Fatalf("%d model requests before the decision; want the turn and the aside, told of the card", len(reqs))
	}
	// Delivered again by the platform: the same message, no second notice
	// and no second answer.
	e.Fake.Redeliver(upd)
	e.Eventually("the redelivery logged as a duplicate", func() bool {
		rows, _ := e.Store.ListReceive(e.Ctx, store.ReceiveFilter{Platform: e.Adapter.Platform(), Reason: chat.ReasonDuplicate, Limit: 10})
		return len(rows) == 1 && rows[0].UpdateID == upd
	})
	time.Sleep(300 * time.Millisecond) // room for a second notice to be sent, if one were coming
	if n, m := e.notices(row.SessionID, kernel.NoticeCardPending), e.countIn("room", waitingNotice); n != 1 || m != 1 {
		t.Fatalf("%d notices in the log, %d in the chat; want one each", n, m)
	}
	if n := len(e.Model.Requests()); n != 2 {
		t.Fatalf("the model was asked %d times before the decision, want twice", n)
	}
	if reply, err := e.Fake.Press("room", card.ID, approve, "alice"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the requester's press: %q %v", reply, err)
	}
	e.reply("room", "Posted the note.")
	reqs = e.Model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want the turn, the aside and the continuation", len(reqs))
	}
	time.Sleep(300 * time.Millisecond) // room for a second answer, if one were coming
	if n := e.countIn("room", "Tomorrow will be sunny."); n != 1 {
		t.Fatalf("the message typed under the card was answered %d times", n)
	}
	if e.Posted() != 1 {
		t.Fatalf("the tool ran %d times", e.Posted())
	}
	e.noFakeErrors()
}

func testCancelDeniesTheCard(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	askToPost(e, "Understood, not posted.")
	_, say := e.ask("room", "alice", "post that the report is ready")
	card, _, _ := e.card("room")
	row := e.Receive(say("alice", "  Cancel "))
	if row.Outcome != chat.ReceiveDropped || row.Reason != chat.ReasonCancel {
		t.Fatalf("the cancel's receive-log row: %+v", row)
	}
	g := e.gateOf(card)
	if g.State != gh.GateDenied || g.Reason != "cancelled by "+g.DecidedBy || g.Surface != e.Adapter.Platform() {
		t.Fatalf("the gate after cancel: %+v", g)
	}
	e.reply("room", "Understood, not posted.")
	e.Eventually("the card edited to the denial", func() bool {
		c := e.cardNow("room", card.ID)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Denied by") && strings.Contains(c.Text, "cancelled by")
	})
	if !toolResultSaid(e.Model.Requests(), "cancelled by "+g.DecidedBy) {
		t.Fatal("the model was never told the card was cancelled")
	}
	// "cancel" is a decision, not a message: no notice, no turn of its
	// own beyond the denial's continuation.
	time.Sleep(300 * time.Millisecond)
	if n := e.UserMessages(g.SessionID); n != 1 {
		t.Fatalf("%d user messages in the log, want the request alone", n)
	}
	if n := len(e.Model.Requests()); n != 2 || e.countIn("room", waitingNotice) != 0 || e.Posted() != 0 {
		t.Fatalf("%d model requests (want 2), %d notices, posted %d", n, e.countIn("room", waitingNotice), e.Posted())
	}
	e.noFakeErrors()
}

func testCancelFromSomeoneWhoMayNotDecide(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}})
	askToPostAside(e, "There is nothing you can cancel.", "Posted the note.")
	session, say := e.ask("room", "alice", "post that the report is ready")
	card, approve, _ := e.card("room")
	row := e.Receive(say("bob", "cancel"))
	if row.Outcome != chat.ReceiveHandedOn || row.SessionID != session {
		t.Fatalf("bob's cancel: %+v", row)
	}
	e.reply("room", waitingNotice)
	// An ordinary message, answered at once in a turn of its own.
	e.reply("room", "There is nothing you can cancel.")
	if g := e.gateOf(card); g.State != gh.GatePending {
		t.Fatalf("bob's cancel decided the card: %+v", g)
	}
	if reply, err := e.Fake.Press("room", card.ID, approve, "alice"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("the requester's press: %q %v", reply, err)
	}
	e.reply("room", "Posted the note.")
	if e.Posted() != 1 {
		t.Fatalf("the tool ran %d times", e.Posted())
	}
	e.noFakeErrors()
}
