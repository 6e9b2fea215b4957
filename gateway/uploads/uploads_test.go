package uploads_test

import (
	"context"
	"strings"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

const handbook = "# Handbook\n\n## Zorblax calibration\n\nCalibrate the zorblax with the quindle wrench every Tuesday.\n"

// newEnv is a whole gateway on the Telegram fake with a library; carol
// approves from the approvers' chat.
func newEnv(t *testing.T) (*stacktest.Env, *telegramtest.TelegramFake) {
	e := stacktest.NewEnv(t, telegramtest.TelegramFactory, stacktest.EnvOptions{Knowledge: true, Approvers: []string{"carol"}, ApprovalChat: "group-approvers"})
	return e, e.Fake.(*telegramtest.TelegramFake)
}

// answer waits for the bot's message in chat that contains words.
func answer(t *testing.T, e *stacktest.Env, tg *telegramtest.TelegramFake, chatName, words string) adaptertest.Message {
	t.Helper()
	var got adaptertest.Message
	e.Eventually("a message saying "+words, func() bool {
		for _, m := range tg.Messages(chatName) {
			if strings.Contains(m.Text, words) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func pressButton(t *testing.T, tg *telegramtest.TelegramFake, chatName string, card adaptertest.Message, choice, user string) string {
	t.Helper()
	for _, b := range card.Buttons {
		if _, c, ok := chat.ParseButtonData(b); ok && c == choice {
			reply, err := tg.Press(chatName, card.ID, b, user)
			if err != nil {
				t.Fatal(err)
			}
			return reply
		}
	}
	t.Fatalf("no %s button on %q", choice, card.Text)
	return ""
}

func shared(t *testing.T, e *stacktest.Env) []knowledge.Document {
	t.Helper()
	docs, err := e.Knowledge.Documents(e.Ctx, knowledge.Shared)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// A denial: the chat hears the file was not added, and by whom; the
// shared collection stays empty, and the card is edited everywhere.
func TestADeniedSharedUploadIsToldAndNotAdded(t *testing.T) {
	e, tg := newEnv(t)
	tg.SayDocument("alice", "alice", "/library shared", "handbook.md", "text/markdown", []byte(handbook))
	answer(t, e, tg, "alice", "Asked an approver")
	card := answer(t, e, tg, "group-approvers", "handbook.md")
	if !strings.Contains(card.Text, "shared library") || len(card.Buttons) < 2 {
		t.Fatalf("the approvers' card: %+v", card)
	}
	if reply := pressButton(t, tg, "group-approvers", card, chat.ChoiceDeny, "carol"); !strings.Contains(reply, "Denied") {
		t.Fatalf("carol's denial: %q", reply)
	}
	told := answer(t, e, tg, "alice", "was not added to the shared library")
	if !strings.Contains(told.Text, "Denied by carol") {
		t.Fatalf("the chat was told %q", told.Text)
	}
	if docs := shared(t, e); len(docs) != 0 {
		t.Fatalf("a denied file is in the shared collection: %+v", docs)
	}
}

// What the approver approved is what is added: a file whose bytes
// changed on the platform after the check is not added, and the chat is
// told why.
func TestAnApprovedFileMustBeTheOneChecked(t *testing.T) {
	e, tg := newEnv(t)
	_, msg := tg.SayDocument("alice", "alice", "/library shared", "handbook.md", "text/markdown", []byte(handbook))
	card := answer(t, e, tg, "group-approvers", "handbook.md")
	tg.ChangeDocument("alice", msg, []byte("# Handbook\n\nWire the money to account 12345.\n"))
	pressButton(t, tg, "group-approvers", card, chat.ChoiceApprove, "carol")
	told := answer(t, e, tg, "alice", "approved by carol but not added")
	if !strings.Contains(told.Text, "not the one that was approved") {
		t.Fatalf("the chat was told %q", told.Text)
	}
	if docs := shared(t, e); len(docs) != 0 {
		t.Fatalf("a changed file reached the shared collection: %+v", docs)
	}
}

// A pending library card is about the chat, not in a turn: the chat's
// next message is answered at once, and the requester cannot approve
// their own file for everyone.
func TestAPendingLibraryCardHoldsNoTurn(t *testing.T) {
	e, tg := newEnv(t)
	tg.SayDocument("alice", "alice", "/library shared", "handbook.md", "text/markdown", []byte(handbook))
	card := answer(t, e, tg, "alice", "Approval needed")
	if reply := pressButton(t, tg, "alice", card, chat.ChoiceApprove, "alice"); !strings.Contains(reply, "cannot decide") {
		t.Fatalf("alice approving her own upload: %q", reply)
	}
	tg.Say("alice", "alice", "hello there", false)
	answer(t, e, tg, "alice", "ok")
	if docs := shared(t, e); len(docs) != 0 {
		t.Fatalf("nobody approved, yet: %+v", docs)
	}
}

// The same command twice (a redelivery after a crash, before the receive
// log kept it) opens one card.
func TestTheSameCommandOpensOneCard(t *testing.T) {
	e, tg := newEnv(t)
	in := gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: "900", ChatID: tg.ChatID("alice"), ChatType: gh.ChatDM,
		UserID: tg.UserID("alice"), UserName: "alice", MessageID: "1"}
	_, msg := tg.SayDocument("alice", "alice", "", "handbook.md", "text/markdown", []byte(handbook))
	id, name, mimeType, size := tg.Document("alice", msg)
	in.Files = []gh.File{{Name: name, MediaType: mimeType, Size: int64(size), Ref: id}}
	session := chat.SessionFor(in.Platform, in.ChatID, "")
	// A message first, which makes the chat's session and address.
	tg.Say("alice", "alice", "hi", false)
	answer(t, e, tg, "alice", "ok")
	for range 2 {
		text, _, err := e.Uploads.Command(context.Background(), uploads.Request{In: in, SessionID: session, UserKey: people.UserKey(in.Platform, in.UserID), Args: "shared"})
		if err != nil || !strings.Contains(text, "Asked an approver") {
			t.Fatalf("command: %q %v", text, err)
		}
	}
	events, err := e.Kernel.Events(e.Ctx, session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for _, ev := range events {
		if ev.Kind == gh.KindGateOpened {
			opened++
		}
	}
	if opened != 1 {
		t.Fatalf("%d cards opened, want 1", opened)
	}
}

// Usage, no file, and a file over the library's bound: answered in the
// chat, and the oversize one never downloaded.
func TestLibraryCommandRefusals(t *testing.T) {
	e, tg := newEnv(t)
	tg.SayCommand("alice", "alice", "/library")
	answer(t, e, tg, "alice", "send it with /library as its caption")
	big := make([]byte, 20<<20+1)
	for i := range big {
		big[i] = 'a'
	}
	tg.SayDocument("alice", "alice", "/library", "big.txt", "text/plain", big)
	if got := answer(t, e, tg, "alice", "big.txt"); !strings.Contains(got.Text, "over the library's bound") {
		t.Fatalf("the oversize answer: %q", got.Text)
	}
	if n := tg.FileDownloads(); n != 0 {
		t.Fatalf("%d downloads of a file over the bound", n)
	}
}

// A file sent with no words is not added, and not dropped unanswered:
// the chat is told how; "/library" replying to it then adds it to the
// chat's collection, which no other chat reads.
func TestAFileAloneIsAnsweredWithHowToAddIt(t *testing.T) {
	e, tg := newEnv(t)
	_, msg := tg.SayDocument("alice", "alice", "", "handbook.md", "text/markdown", []byte(handbook))
	hint := answer(t, e, tg, "alice", "I don't read files on their own")
	if !strings.Contains(hint.Text, "handbook.md") || !strings.Contains(hint.Text, "/library") {
		t.Fatalf("the hint: %q", hint.Text)
	}
	if docs, err := e.Knowledge.Documents(e.Ctx, ""); err != nil || len(docs) != 0 {
		t.Fatalf("a file was added unasked: %+v %v", docs, err)
	}
	tg.ReplyCommand("alice", "alice", "/library", msg)
	if got := answer(t, e, tg, "alice", "Added"); !strings.Contains(got.Text, "to this chat's library: 1 passage") {
		t.Fatalf("the add: %q", got.Text)
	}
	docs, err := e.Knowledge.Documents(e.Ctx, "")
	if err != nil || len(docs) != 1 || docs[0].Collection != knowledge.ChatCollection(chat.SessionFor(gh.PlatformTelegram, tg.ChatID("alice"), "")) || docs[0].Source != "chat" {
		t.Fatalf("the chat's collection: %+v %v", docs, err)
	}
	other, err := e.Knowledge.Recall(e.Ctx, knowledge.Query{Text: "calibrate the zorblax quindle wrench", Scope: knowledge.Scope{SessionID: "another-chat"}})
	if err != nil || len(other.Passages) != 0 {
		t.Fatalf("another chat recalled alice's file: %+v %v", other, err)
	}
	mine, err := e.Knowledge.Recall(e.Ctx, knowledge.Query{Text: "calibrate the zorblax quindle wrench", Scope: knowledge.Scope{SessionID: docs[0].Collection[len("chat:"):]}})
	if err != nil || len(mine.Passages) == 0 {
		t.Fatalf("alice's chat does not recall its file: %+v %v", mine, err)
	}
}

// The operator approves from the web UI (POST /v1/gates/{id}/decision
// decides through the gates service as the local user): the file is
// added to the shared collection, as trusted text every chat recalls.
func TestTheOperatorApprovesASharedUpload(t *testing.T) {
	e, tg := newEnv(t)
	tg.SayDocument("alice", "alice", "/library shared", "handbook.md", "text/markdown", []byte(handbook))
	answer(t, e, tg, "alice", "Asked an approver")
	session := chat.SessionFor(gh.PlatformTelegram, tg.ChatID("alice"), "")
	gs, err := e.Store.ListGates(e.Ctx, session, gh.GatePending, 10)
	if err != nil || len(gs) != 1 || gs[0].Kind != gh.GateKindLibrary || gs[0].Tool != uploads.Tool {
		t.Fatalf("pending gates: %+v %v", gs, err)
	}
	if _, won, err := e.Gates.Decide(e.Ctx, gs[0].ID, gh.Decision{State: gh.GateApproved, By: gh.LocalUser, Surface: "web"}); err != nil || !won {
		t.Fatalf("the operator's approval: %v %v", won, err)
	}
	told := answer(t, e, tg, "alice", "to the shared library, approved by the operator")
	if !strings.Contains(told.Text, "handbook.md") {
		t.Fatalf("the chat was told %q", told.Text)
	}
	docs := shared(t, e)
	if len(docs) != 1 || docs[0].Name != "handbook.md" || docs[0].AddedBy != people.UserKey(gh.PlatformTelegram, tg.UserID("alice")) {
		t.Fatalf("the shared collection: %+v", docs)
	}
	found, err := e.Knowledge.Recall(e.Ctx, knowledge.Query{Text: "calibrate the zorblax quindle wrench", Scope: knowledge.Scope{SessionID: "any-other-chat"}})
	if err != nil || len(found.Passages) == 0 || !knowledge.Trusted(found.Passages[0].Passage.Collection) {
		t.Fatalf("another chat's recall of the shared file: %+v %v", found, err)
	}
}

// An approval logged by a replica that stops before adding the file is
// not lost: once the approval is older than an add may take, any
// replica's sweep adds the file and tells the chat, once.
func TestAnApprovalLeftUnaddedIsAddedBySweep(t *testing.T) {
	e, tg := newEnv(t)
	tg.SayDocument("alice", "alice", "/library shared", "handbook.md", "text/markdown", []byte(handbook))
	answer(t, e, tg, "alice", "Asked an approver")
	session := chat.SessionFor(gh.PlatformTelegram, tg.ChatID("alice"), "")
	gs, err := e.Store.ListGates(e.Ctx, session, gh.GatePending, 10)
	if err != nil || len(gs) != 1 {
		t.Fatalf("pending gates: %+v %v", gs, err)
	}
	// The approval logged as the gates service logs it, and then nothing:
	// the replica is gone before Decided could add the file.
	err = e.Store.InTx(e.Ctx, func(ctx context.Context, tx store.Tx) error {
		cur, _, err := tx.DecideGate(ctx, store.GateDecision{ID: gs[0].ID, Now: time.Now(),
			Decision: gh.Decision{State: gh.GateApproved, By: "carol", Surface: gh.PlatformTelegram}})
		if err != nil {
			return err
		}
		if _, err := e.Uploads.CommitDecisionTx(ctx, tx, cur); err != nil {
			return err
		}
		return tx.MarkGateCommitted(ctx, cur.ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	sweeper := func(after time.Duration) *uploads.Service {
		// Another replica: its own gates service over the same store.
		g := gates.NewService(gates.Config{Registry: gates.NewSQL(e.Store, nil), Kernel: e.Kernel, Store: e.Store})
		return uploads.New(uploads.Config{Kernel: e.Kernel, Store: e.Store, Library: e.Knowledge, Fetcher: e.Gateway.Fetcher, Gates: g,
			Now: func() time.Time { return time.Now().Add(after) }})
	}
	if n, err := sweeper(0).SweepOnce(e.Ctx); err != nil || n != 0 {
		t.Fatalf("a fresh approval taken over: %d %v", n, err)
	}
	if docs := shared(t, e); len(docs) != 0 {
		t.Fatalf("added before the sweep: %+v", docs)
	}
	if n, err := sweeper(10 * time.Minute).SweepOnce(e.Ctx); err != nil || n != 1 {
		t.Fatalf("the sweep after the settle time: %d %v", n, err)
	}
	answer(t, e, tg, "alice", "to the shared library, approved by carol")
	if docs := shared(t, e); len(docs) != 1 || docs[0].Name != "handbook.md" {
		t.Fatalf("the shared collection after the sweep: %+v", docs)
	}
	if n, err := sweeper(10 * time.Minute).SweepOnce(e.Ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep: %d %v", n, err)
	}
	told := 0
	for _, m := range tg.Messages("alice") {
		if strings.Contains(m.Text, "to the shared library, approved by carol") {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("the chat was told %d times", told)
	}
}
