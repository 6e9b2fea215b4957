package adaptertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// Run is the suite every adapter passes: a whole gateway driven from the
// platform's fake server, as a person on that platform would use it.
// stack builds that gateway around the adapter and fake the factory
// makes (internal/testing/stacktest.Stack); this package stays below it.
func Run(t *testing.T, stack NewStack, factory Factory) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, mk func(StackOptions) *env)
	}{
		{"TextAnsweredInSameChat", testAnswered},
		{"BotAndStrangerDropped", testDropped},
		{"FloodDropsThe31st", testFlood},
		{"RedeliveryIsADuplicate", testRedelivery},
		{"MessagesDuringATurnAreAllAnswered", testMidTurn},
		{"ApprovalCardPressAndSecondPress", testApproval},
		{"DecisionOnWebUpdatesTheCard", testWebDecision},
		{"OnlyTheRequesterDecides", testOnlyTheRequesterDecides},
		{"NamedApproverDecides", testNamedApproverDecides},
		{"ApproversAllowedKeepsTheOldRule", testAllowedKeepsTheOldRule},
		{"ApprovalChatGetsACopy", testApprovalChatCopy},
		{"DenyWithReasonReachesTheModel", testDenyWithReason},
		{"MessageWhileACardIsPending", testMessageWhileACardIsPending},
		{"CancelDeniesTheCard", testCancelDeniesTheCard},
		{"CancelFromSomeoneWhoMayNotDecide", testCancelFromSomeoneWhoMayNotDecide},
		{"ApproveForThisChatGrantsAndRevokes", testGrantInTheChat},
		{"ModelAndThinkChosenInTheChat", testModelAndThinkInTheChat},
		{"TimeZoneCommandAndDatedTurns", testTimeZoneInTheChat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, func(o StackOptions) *env { return &env{Stack: stack(t, factory, o), T: t} })
		})
	}
}

// env is one test's stack.
type env struct {
	Stack
	T testing.TB
}

// Eventually polls cond until it holds or 10 s pass.
func (e *env) Eventually(what string, cond func() bool) {
	e.T.Helper()
	Eventually(e.T, what, cond)
}

// Receive returns the first receive-log row of an update, waiting for it.
func (e *env) Receive(update string) store.ReceiveEntry {
	e.T.Helper()
	return WaitReceive(e.T, e.Ctx, e.Store, e.Adapter.Platform(), update)
}

// UserMessages counts the user.message events of a session.
func (e *env) UserMessages(session string) int {
	e.T.Helper()
	evs, err := e.Kernel.Events(e.Ctx, session, 0, 10000)
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Kind == gh.KindUserMessage {
			n++
		}
	}
	return n
}

// reply waits for a bot message in chat whose text contains want.
func (e *env) reply(chatName, want string) Message {
	e.T.Helper()
	var got Message
	e.Eventually(fmt.Sprintf("a message containing %q in %s", want, chatName), func() bool {
		for _, m := range e.Fake.Messages(chatName) {
			if strings.Contains(m.Text, want) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func (e *env) noFakeErrors() {
	e.T.Helper()
	if errs := e.Fake.Errors(); len(errs) > 0 {
		e.T.Fatalf("the fake platform refused requests the real one would refuse too: %q", errs)
	}
}

func testAnswered(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	e.Model.Push(modeltest.Reply{Text: "Hello from the agent."})
	upd := e.Fake.Say("room", "alice", "hi there", false)
	row := e.Receive(upd)
	if row.Outcome != chat.ReceiveHandedOn || row.SessionID == "" || row.Seq == 0 {
		t.Fatalf("a message from an allowed user is handed on: %+v", row)
	}
	e.reply("room", "Hello from the agent.")
	e.Eventually("the update acknowledged", func() bool { return e.Fake.Acked(upd) })
	if msgs := e.Fake.Messages("elsewhere"); len(msgs) != 0 {
		t.Fatalf("an answer leaked into another chat: %+v", msgs)
	}
	// The log sees a session id and a platform name, never a chat id.
	evs, _ := e.Kernel.Events(e.Ctx, row.SessionID, 0, 100)
	for _, ev := range evs {
		if row.ChatID != "" && strings.Contains(string(ev.Payload), row.ChatID) && len(row.ChatID) > 3 {
			t.Fatalf("the chat id %q is in the log: %s", row.ChatID, ev.Payload)
		}
	}
	if e.UserMessages(row.SessionID) != 1 {
		t.Fatal("one message, one user.message")
	}
	e.noFakeErrors()
}

func testDropped(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	bot := e.Fake.Say("room", "otherbot", "I am a bot", true)
	stranger := e.Fake.Say("room", "mallory", "let me in", false)
	for upd, reason := range map[string]string{bot: chat.ReasonFromBot, stranger: chat.ReasonNotAllowed} {
		row := e.Receive(upd)
		if row.Outcome != chat.ReceiveDropped || row.Reason != reason {
			t.Fatalf("update %s: %s/%s, want dropped/%s", upd, row.Outcome, row.Reason, reason)
		}
		e.Eventually("the dropped update acknowledged", func() bool { return e.Fake.Acked(upd) })
	}
	// Proof that nothing answered them: a later message is answered, and
	// it is the only thing the bot said.
	e.Model.Push(modeltest.Reply{Text: "Only you, alice."})
	e.Fake.Say("room", "alice", "anyone there?", false)
	e.reply("room", "Only you, alice.")
	if n := len(e.Model.Requests()); n != 1 {
		t.Fatalf("the model was called %d times; the bot and the stranger must not reach it", n)
	}
	if msgs := e.Fake.Messages("room"); len(msgs) != 1 {
		t.Fatalf("the bot said %d things, want 1: %+v", len(msgs), msgs)
	}
	e.noFakeErrors()
}

func testFlood(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	var ups []string
	for i := range 31 {
		ups = append(ups, e.Fake.Say("room", "alice", fmt.Sprintf("message %d", i+1), false))
	}
	handed, flood := 0, 0
	for _, u := range ups {
		switch r := e.Receive(u); {
		case r.Outcome == chat.ReceiveHandedOn:
			handed++
		case r.Reason == chat.ReasonFlood:
			flood++
		default:
			t.Fatalf("unexpected outcome %+v", r)
		}
	}
	if handed != 30 || flood != 1 {
		t.Fatalf("31 messages in a minute: %d handed on, %d flood; want 30 and 1", handed, flood)
	}
	if r := e.Receive(ups[30]); r.Reason != chat.ReasonFlood {
		t.Fatalf("the 31st is the one dropped, got %+v", r)
	}
	// Another chat is not held back by this one's flood.
	other := e.Fake.Say("other", "alice", "hello from elsewhere", false)
	if r := e.Receive(other); r.Outcome != chat.ReceiveHandedOn {
		t.Fatalf("flood is per chat: %+v", r)
	}
}

func testRedelivery(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	e.Model.Push(modeltest.Reply{Text: "Answered once."})
	upd := e.Fake.Say("room", "alice", "say it once", false)
	first := e.Receive(upd)
	e.reply("room", "Answered once.")
	e.Fake.Redeliver(upd)
	e.Eventually("the redelivery logged as a duplicate", func() bool {
		rows, _ := e.Store.ListReceive(e.Ctx, store.ReceiveFilter{Platform: e.Adapter.Platform(), Reason: chat.ReasonDuplicate, Limit: 10})
		return len(rows) == 1 && rows[0].UpdateID == upd
	})
	if n := e.UserMessages(first.SessionID); n != 1 {
		t.Fatalf("a redelivered update made %d user.message events, want 1", n)
	}
	if n := len(e.Model.Requests()); n != 1 {
		t.Fatalf("a redelivered update was answered again: %d model calls", n)
	}
	count := 0
	for _, m := range e.Fake.Messages("room") {
		if strings.Contains(m.Text, "Answered once.") {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("the answer was sent %d times", count)
	}
	e.noFakeErrors()
}

// card waits for an approval card in chat and returns it with its button
// data for approve and deny.
func (e *env) card(chatName string) (m Message, approve, deny string) {
	e.T.Helper()
	e.Eventually("an approval card in "+chatName, func() bool {
		for _, msg := range e.Fake.Messages(chatName) {
			if len(msg.Buttons) >= 2 {
				m = msg
				return true
			}
		}
		return false
	})
	for _, b := range m.Buttons {
		_, choice, ok := chat.ParseButtonData(b)
		switch {
		case ok && choice == chat.ChoiceApprove:
			approve = b
		case ok && choice == chat.ChoiceDeny:
			deny = b
		}
	}
	if approve == "" || deny == "" {
		e.T.Fatalf("card has no approve/deny buttons: %+v", m)
	}
	return m, approve, deny
}

func (e *env) cardNow(chatName, id string) Message {
	for _, m := range e.Fake.Messages(chatName) {
		if m.ID == id {
			return m
		}
	}
	e.T.Fatalf("card %s vanished from %s", id, chatName)
	return Message{}
}

func askToPost(e *env, final string) {
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_post", Name: "post_note", Arguments: `{"text":"The report is ready."}`}}},
		modeltest.Reply{Text: final})
}

func testApproval(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{Allowed: []string{"alice", "bob"}})
	askToPost(e, "Posted the note.")
	e.Fake.Say("room", "alice", "post that the report is ready", false)
	card, approve, _ := e.card("room")
	if !strings.Contains(card.Text, "post_note") || !strings.Contains(card.Text, "The report is ready.") {
		t.Fatalf("the card must say what will run: %q", card.Text)
	}
	if e.Posted() != 0 {
		t.Fatal("the tool ran before anyone approved")
	}
	// A stranger's press decides nothing.
	if reply, err := e.Fake.Press("room", card.ID, approve, "mallory"); err != nil || !strings.Contains(strings.ToLower(reply), "not allowed") {
		t.Fatalf("stranger's press: %q %v", reply, err)
	}
	reply, err := e.Fake.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("first press: %q %v", reply, err)
	}
	e.reply("room", "Posted the note.")
	if n := e.Posted(); n != 1 {
		t.Fatalf("the approved tool ran %d times", n)
	}
	e.Eventually("the card edited to its outcome", func() bool {
		c := e.cardNow("room", card.ID)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved by")
	})
	// A second press (from a client that still shows the buttons).
	second, err := e.Fake.Press("room", card.ID, approve, "bob")
	if err != nil || !strings.Contains(strings.ToLower(second), "already") {
		t.Fatalf("a second press must hear the decision made, got %q %v", second, err)
	}
	if !strings.Contains(second, "alice") && !strings.Contains(second, e.Fake.UserID("alice")) {
		t.Fatalf("a second press must hear who decided, got %q", second)
	}
	if n := e.Posted(); n != 1 {
		t.Fatalf("a second press ran the tool again: %d runs", n)
	}
	e.noFakeErrors()
}

func testWebDecision(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	askToPost(e, "Posted after the web approval.")
	e.Fake.Say("room", "alice", "post it", false)
	card, approve, _ := e.card("room")
	id, _, _ := chat.ParseButtonData(approve)
	g, won, err := e.Gates.Decide(e.Ctx, id, gh.Decision{State: gh.GateApproved, By: "carol", Surface: "web"})
	if err != nil || !won || g.State != gh.GateApproved {
		t.Fatalf("web decision: %+v %v %v", g, won, err)
	}
	e.Eventually("the platform card shows the web decision", func() bool {
		c := e.cardNow("room", card.ID)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved by carol (web)")
	})
	e.reply("room", "Posted after the web approval.")
	reply, err := e.Fake.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "carol") {
		t.Fatalf("a press after the web decision hears it: %q", reply)
	}
	if n := e.Posted(); n != 1 {
		t.Fatalf("tool ran %d times", n)
	}
	if !slices.ContainsFunc(e.Fake.Messages("room"), func(m Message) bool { return m.ID == card.ID }) {
		t.Fatal("card gone")
	}
	e.noFakeErrors()
}

// Messages sent back to back, the later ones while the first turn runs,
// never run over each other and are all answered: each is presented to
// the model by exactly one answered turn. (On Slack each top-level
// channel message starts a thread, its own session; elsewhere they share
// the chat's.)
func testMidTurn(t *testing.T, mk func(StackOptions) *env) {
	e := mk(StackOptions{})
	var ups []string
	for i := range 3 {
		ups = append(ups, e.Fake.Say("room", "alice", fmt.Sprintf("part %d", i+1), false))
	}
	sessions := map[string]bool{}
	for _, u := range ups {
		sessions[e.Receive(u).SessionID] = true
	}
	e.Eventually("every message answered once", func() bool {
		inputs := 0
		for session := range sessions {
			evs, _ := e.Kernel.Events(e.Ctx, session, 0, 1000)
			answered := map[int64]int{}
			var seqs []int64
			for _, ev := range evs {
				switch ev.Kind {
				case gh.KindUserMessage:
					seqs = append(seqs, ev.Seq)
				case gh.KindAssistantMessage:
					var a gh.AssistantMessage
					if json.Unmarshal(ev.Payload, &a) == nil && a.StopReason == gh.StopEndTurn {
						for _, s := range a.InputSeqs {
							answered[s]++
						}
					}
				}
			}
			for _, s := range seqs {
				if answered[s] != 1 {
					return false
				}
			}
			inputs += len(seqs)
		}
		return inputs == 3
	})
	e.Eventually("the answers in the chat", func() bool { return len(e.Fake.Messages("room")) >= len(sessions) })
	e.noFakeErrors()
}
