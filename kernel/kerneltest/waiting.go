package kerneltest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// openGate commits gate.opened of o under l with its gate row, as the tool
// worker does, and settles the run awaiting approval.
func (f *fixture) openGate(l gh.Lease, o gh.GateOpened) {
	f.t.Helper()
	now := f.clock.Now()
	payload, _ := json.Marshal(o)
	err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := f.k.CommitTx(ctx, tx, l, gh.NewEvent{Kind: gh.KindGateOpened, Payload: payload, Key: gh.GateOpenedKey(o.ToolCallID, 1)}); err != nil {
			return err
		}
		_, err := tx.InsertGate(ctx, gh.Gate{ID: o.GateID, SessionID: l.SessionID, RunID: l.RunID, ToolCallID: o.ToolCallID, Tool: o.Tool,
			Arguments: json.RawMessage(`{}`), Kind: o.Kind, Question: o.Question, Options: o.Options, ExpiresAt: now.Add(time.Hour), Created: now})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval}); err != nil {
		f.t.Fatal(err)
	}
}

// waitingNotices returns the card-pending notices of the session by the
// seq of the input each answers.
func (f *fixture) waitingNotices(session string) map[int64]gh.Notice {
	f.t.Helper()
	out := map[int64]gh.Notice{}
	evs := f.events(session)
	for i, e := range evs {
		if e.Kind != gh.KindNotice {
			continue
		}
		var n gh.Notice
		if err := json.Unmarshal(e.Payload, &n); err != nil || n.Code != kernel.NoticeCardPending {
			continue
		}
		// The kernel commits facts, never words: the surfaces word them.
		if n.Text != "" || n.Pending == nil {
			f.t.Fatalf("notice at seq %d is worded by the kernel or carries no card: %s", e.Seq, e.Payload)
		}
		if strings.Contains(string(e.Payload), "the secret body") {
			f.t.Fatalf("notice at seq %d carries a free-text field: %s", e.Seq, e.Payload)
		}
		n.Text = cards.NoticeText(n)
		// The notice follows its input at once.
		if i == 0 || evs[i-1].Kind != gh.KindUserMessage || e.Key != kernel.WaitingKey(evs[i-1].Seq) {
			f.t.Fatalf("notice at seq %d (key %q) does not follow its input", e.Seq, e.Key)
		}
		out[evs[i-1].Seq] = n
	}
	return out
}

func userMsg(text, source string) json.RawMessage {
	b, _ := json.Marshal(gh.UserMessage{Text: text, Source: source, Delivery: gh.DeliveryQueue})
	return b
}

// A message committed while a card of its session is pending is followed
// by a notice naming the card, keyed by the message: once, whether the
// message came through EdgeCommit (the API) or a caller's transaction
// (the gateway's receive), and never for a repeat, a rolled-back
// transaction or a session whose cards are decided.
func testWaitingNotice(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	first := f.input("s1", "r1", "email Sara")
	if len(f.waitingNotices("s1")) != 0 {
		t.Fatal("a notice without a card")
	}
	l := f.claim("w")
	f.openGate(l, gh.GateOpened{GateID: "g1", ToolCallID: "c1", Tool: "email_send", Kind: gh.GateKindApproval,
		Fields: []gh.CardField{{Label: "To", Value: "sara@example.com"}, {Label: "Body", Value: "the secret body", FreeText: true}}})

	web := gh.NewEvent{Kind: gh.KindUserMessage, Payload: userMsg("are you there?", "web"), Key: "r2"}
	c, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: web})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := f.waitingNotices("s1")[c.Event.Seq]
	if !ok || len(f.waitingNotices("s1")) != 1 {
		t.Fatalf("notices %+v, want one for seq %d", f.waitingNotices("s1"), c.Event.Seq)
	}
	for _, want := range []string{"email_send", "To: sara@example.com", "above in this conversation", "is answered now, in a turn of its own"} {
		if !strings.Contains(n.Text, want) {
			t.Fatalf("notice %q lacks %q", n.Text, want)
		}
	}
	if strings.Contains(n.Text, "cancel") || strings.Contains(n.Text, "secret body") {
		t.Fatalf("the web's notice offers the chat's cancel, or shows free text: %q", n.Text)
	}
	// A repeat of the request is the same input: no second notice.
	if again, err := f.k.EdgeCommit(f.ctx, kernel.EdgeInput{SessionID: "s1", Event: web}); err != nil || !again.Duplicate {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if len(f.waitingNotices("s1")) != 1 {
		t.Fatal("a repeated input got a second notice")
	}

	// In a caller's transaction the notice commits with the input, and
	// goes with it when the transaction rolls back.
	tg := kernel.EdgeInput{SessionID: "s1", Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: userMsg("hello?", "telegram"), Key: "in:telegram:7"}}
	errBack := errors.New("roll back")
	err = f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := f.k.EdgeCommitTx(ctx, tx, tg); err != nil {
			return err
		}
		return errBack
	})
	if !errors.Is(err, errBack) || len(f.waitingNotices("s1")) != 1 {
		t.Fatalf("rolled back: %v, notices %+v", err, f.waitingNotices("s1"))
	}
	var tc kernel.Committed
	commitTx := func() {
		t.Helper()
		if err := f.st.InTx(f.ctx, func(ctx context.Context, tx store.Tx) (err error) {
			tc, err = f.k.EdgeCommitTx(ctx, tx, tg)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	commitTx()
	n, ok = f.waitingNotices("s1")[tc.Event.Seq]
	if !ok || !strings.Contains(n.Text, "above in this chat") || !strings.Contains(n.Text, `reply "cancel"`) {
		t.Fatalf("the chat's notice: %+v %v", n, ok)
	}
	commitTx() // redelivered
	if !tc.Duplicate || len(f.waitingNotices("s1")) != 2 {
		t.Fatalf("redelivery: %+v, notices %+v", tc, f.waitingNotices("s1"))
	}

	// Decided: a message is a message again.
	now := f.clock.Now()
	if _, won, err := f.st.DecideGate(f.ctx, store.GateDecision{ID: "g1", Decision: gh.Decision{State: gh.GateDenied, By: "ana", Surface: "web"}, Now: now}); err != nil || !won {
		t.Fatalf("decide: %v %v", won, err)
	}
	last := f.input("s1", "r3", "thanks")
	if _, ok := f.waitingNotices("s1")[last.Event.Seq]; ok || len(f.waitingNotices("s1")) != 2 || first.Event.Seq != 1 {
		t.Fatalf("notices after the decision %+v", f.waitingNotices("s1"))
	}
}

// A question names its question, and the oldest card is named with a
// count of the others.
func testWaitingNoticeNamesTheOldestCard(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "email Sara")
	l := f.claim("w")
	f.openGate(l, gh.GateOpened{GateID: "g1", ToolCallID: "c1", Tool: "email_send", Kind: gh.GateKindClarify, Question: "Which Sara?", Options: []string{"a", "b"}})
	f.clock.Advance(time.Second)
	c := f.input("s1", "", "the one at work")
	n := f.waitingNotices("s1")[c.Event.Seq]
	if !strings.Contains(n.Text, "Which Sara?") || strings.Contains(n.Text, "more") {
		t.Fatalf("question's notice %q", n.Text)
	}
	l = f.claim("w")
	f.openGate(l, gh.GateOpened{GateID: "g2", ToolCallID: "c2", Tool: "shell_exec", Kind: gh.GateKindApproval, Fields: []gh.CardField{{Label: "Command", Value: "ls"}}})
	c = f.input("s1", "", "and?")
	if n := f.waitingNotices("s1")[c.Event.Seq]; !strings.Contains(n.Text, "Which Sara?") || !strings.Contains(n.Text, "(and 1 more)") {
		t.Fatalf("two cards' notice %q", n.Text)
	}
}

// Input an attempt left for a turn of its own queues the session again
// when the run leaves the session lock: when it ends, and when it waits
// for another decision (a waiting run holds no lock).
func testUnansweredRequeues(t *testing.T, h Harness) {
	f := newFixture(t, h, kernel.Config{})
	f.session("s1")
	f.input("s1", "", "hello")
	l := f.claim("w")
	s, err := f.k.Finish(f.ctx, l, kernel.Settle{Outcome: gh.OutcomeDone, Unanswered: true})
	if err != nil || s.State != gh.RunDone || !s.Requeued || s.RunID == l.RunID {
		t.Fatalf("done with input left: %+v %v", s, err)
	}
	next := f.claim("w")
	if next.RunID != s.RunID {
		t.Fatalf("claimed %d, want the new run %d", next.RunID, s.RunID)
	}
	s, err = f.k.Finish(f.ctx, next, kernel.Settle{Outcome: gh.OutcomeAwaitingApproval, Unanswered: true})
	if err != nil || s.State != gh.RunAwaitingApproval || !s.Requeued || s.RunID == next.RunID {
		t.Fatalf("awaiting with input left: %+v %v; want a new run for it", s, err)
	}
	if got := f.claim("w"); got.RunID != s.RunID {
		t.Fatalf("claimed %d, want the new run %d", got.RunID, s.RunID)
	}
	f.noClaim()
}
