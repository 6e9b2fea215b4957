package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// Dispatcher behaviour, driven through the real Telegram adapter against
// the strict Telegram fake.

func telegramEnv(t testing.TB, opts telegramtest.TelegramOptions, eo stacktest.EnvOptions) (*stacktest.Env, *telegramtest.TelegramFake) {
	var fake *telegramtest.TelegramFake
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		a, f := telegramtest.NewTelegramAdapter(tb, opts)
		fake = f
		return a, f
	}, eo)
	return e, fake
}

// session makes chat known to the gateway (address and session) and
// returns its session id.
func session(e *stacktest.Env, chat string) string {
	e.T.Helper()
	e.Model.Push(modeltest.Reply{Text: "hello " + chat})
	upd := e.Fake.Say(chat, "alice", "hi", false)
	row := e.Receive(upd)
	e.Eventually("the greeting in "+chat, func() bool {
		for _, m := range e.Fake.Messages(chat) {
			if m.Text == "hello "+chat {
				return true
			}
		}
		return false
	})
	return row.SessionID
}

// enqueue adds outbox rows the way the follower does, after the log's end.
func enqueue(e *stacktest.Env, sessionID string, texts ...string) {
	e.T.Helper()
	for i, text := range texts {
		p, _ := json.Marshal(map[string]string{"text": text})
		now := time.Now().UTC()
		if ok, err := e.Store.EnqueueOutbox(e.Ctx, store.OutboxEntry{SessionID: sessionID, Seq: int64(1000 + i), Platform: gh.PlatformTelegram,
			Kind: store.OutboxMessage, Payload: p, AvailableAt: now, Created: now}); err != nil || !ok {
			e.T.Fatalf("enqueue: %v %v", ok, err)
		}
	}
}

func texts(f *telegramtest.TelegramFake, chat string) []string {
	var out []string
	for _, m := range f.Messages(chat) {
		out = append(out, m.Text)
	}
	return out
}

func TestLongAnswerIsSplitAtTheLimitAndSentInOrder(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "Paragraph %d says <something> & more, at some length to fill the message up.\n\n", i)
	}
	long := strings.TrimSpace(b.String())
	e.Model.Push(modeltest.Reply{Text: long})
	e.Fake.Say("alice", "alice", "tell me everything", false)
	var got []string
	e.Eventually("the whole answer", func() bool {
		got = texts(fake, "alice")
		return len(got) > 0 && strings.HasSuffix(got[len(got)-1], "Paragraph 119 says <something> & more, at some length to fill the message up.")
	})
	if len(got) < 3 {
		t.Fatalf("a %d-character answer in %d message(s)", utf8.RuneCountInString(long), len(got))
	}
	for i, m := range fake.TelegramMessages("alice") {
		if n := utf8.RuneCountInString(m.Source); n > 4096 {
			t.Fatalf("part %d is %d characters after escaping; Telegram's limit is 4096", i, n)
		}
	}
	if strings.Join(strings.Fields(strings.Join(got, "\n\n")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Fatal("the parts, in order, are not the answer")
	}
}

func TestRateLimitedSendsArriveOnceAndInOrder(t *testing.T) {
	// The fake is stricter than the pacing (2 s per chat against our
	// ~1.1 s): 429s must come, and each must be waited out, not lost.
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{RateLimit: true, Rates: telegramtest.TelegramRates{PerChat: 2 * time.Second}}, stacktest.EnvOptions{})
	s1 := session(e, "alice")
	want := []string{"one", "two", "three", "four"}
	enqueue(e, s1, want...)
	e.Eventually("all four", func() bool { return len(texts(fake, "alice")) == 5 })
	got := texts(fake, "alice")[1:]
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("sent %q, want %q once each in order", got, want)
	}
	if len(fake.Throttled()) == 0 {
		t.Fatal("the fake never answered 429: the test did not test the retry")
	}
	e.Eventually("every row recorded sent", func() bool {
		rows, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{SessionID: s1, Limit: 10})
		for _, r := range rows {
			if r.State != store.OutboxSent {
				return false
			}
		}
		return len(rows) == 5
	})
	if errs := fake.Errors(); len(errs) > 0 {
		t.Fatalf("refused: %q", errs)
	}
}

func TestRefusedSendIsADeadLetterAndTheChatGoesOn(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	s1 := session(e, "alice")
	// Something Telegram refuses for good: an answer made only of an
	// unclosed tag is fine escaped, so refuse by sending to a chat the
	// bot was removed from — a second session whose chat the fake
	// does not know.
	ghost := chat.SessionFor(gh.PlatformTelegram, "-999", "")
	now := time.Now().UTC()
	if _, _, err := e.Store.UpsertAddress(e.Ctx, store.AddressEntry{SessionID: ghost, Address: gh.Address{Platform: gh.PlatformTelegram, ChatID: "-999", ChatType: gh.ChatGroup}, Updated: now}); err != nil {
		t.Fatal(err)
	}
	enqueue(e, ghost, "to nowhere", "still nowhere")
	enqueue(e, s1, "after the ghost")
	e.Eventually("both ghost rows dead", func() bool {
		rows, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{SessionID: ghost, State: store.OutboxDead, Limit: 10})
		return len(rows) == 2
	})
	rows, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{SessionID: ghost, Limit: 10})
	for _, r := range rows {
		if !strings.Contains(r.LastError, "chat not found") || r.Attempts != 1 {
			t.Fatalf("a permanent refusal is kept with its reason after one try: %+v", r)
		}
	}
	e.Eventually("the healthy chat's message", func() bool { return slicesContains(texts(fake, "alice"), "after the ghost") })
	st, err := e.Gateway.Status(e.Ctx)
	if err != nil || len(st) != 1 || st[0].Dead != 2 {
		t.Fatalf("status shows the dead letters: %+v %v", st, err)
	}
}

func TestRowLeftSendingByADeadReplicaIsNotSentAgain(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	s1 := session(e, "alice")
	// A replica claimed the row and died mid-send: its claim expired.
	p, _ := json.Marshal(map[string]string{"text": "maybe sent"})
	now := time.Now().UTC()
	if _, err := e.Store.EnqueueOutbox(e.Ctx, store.OutboxEntry{SessionID: s1, Seq: 900, Platform: gh.PlatformTelegram, Kind: store.OutboxMessage,
		Payload: p, AvailableAt: now.Add(time.Hour), Created: now}); err != nil {
		t.Fatal(err)
	}
	rows, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{SessionID: s1, State: store.OutboxPending, Limit: 10})
	if len(rows) != 1 {
		t.Fatalf("rows: %+v", rows)
	}
	if _, ok, err := e.Store.ClaimOutbox(e.Ctx, rows[0].ID, "dead-replica", now.Add(-time.Minute), now.Add(-time.Second)); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	enqueue(e, s1, "next one")
	e.Eventually("the next message", func() bool { return slicesContains(texts(fake, "alice"), "next one") })
	if slicesContains(texts(fake, "alice"), "maybe sent") {
		t.Fatal("a send whose outcome is unknown was sent again")
	}
	dead, _ := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{SessionID: s1, State: store.OutboxDead, Limit: 10})
	if len(dead) != 1 || !strings.Contains(dead[0].LastError, "outcome unknown") {
		t.Fatalf("the unknown send is a visible dead letter: %+v", dead)
	}
}

func TestSecondReplicaTakesOverThePlatform(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{})
	session(e, "alice")
	// A second replica on the same database, configured alike.
	second := gateway.New(gateway.Config{Kernel: e.Kernel, Store: e.Store, Gates: e.Gates, Adapters: []chat.Adapter{e.Adapter},
		Allowed: map[string][]string{gh.PlatformTelegram: {e.Fake.UserID("alice")}}, Poll: 50 * time.Millisecond, LeaseTTL: 3 * time.Second,
		Owner: "replica-2", Logger: quiet})
	if err := second.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	defer second.Stop(e.Ctx)
	time.Sleep(1500 * time.Millisecond) // a lease renewal or two
	st, _ := second.Status(e.Ctx)
	if st[0].State != gateway.StateStandby || st[0].LeaseOwner == "replica-2" || st[0].LeaseOwner == "" {
		t.Fatalf("the second replica must wait while the first holds the connection: %+v", st[0])
	}
	if err := e.Gateway.Stop(e.Ctx); err != nil {
		t.Fatal(err)
	}
	e.Eventually("the second replica connected", func() bool {
		st, _ := second.Status(e.Ctx)
		return st[0].State == gateway.StateConnected && st[0].LeaseOwner == "replica-2"
	})
	e.Model.Push(modeltest.Reply{Text: "answered by the second replica"})
	e.Fake.Say("alice", "alice", "still there?", false)
	e.Eventually("an answer through the second replica", func() bool { return slicesContains(texts(fake, "alice"), "answered by the second replica") })
	if errs := fake.Errors(); len(errs) > 0 {
		t.Fatalf("two connections at once show as refused getUpdates: %q", errs)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
