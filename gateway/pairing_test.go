package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// Pairing: a stranger who writes in a direct chat gets one code as a
// reply (through the outbox), their message goes nowhere, an approval
// lets them in for their next message, and a revocation makes them a
// stranger again.

var codeRE = regexp.MustCompile(`\b[A-HJKMNP-Z2-9]{8}\b`)

func pairingGateway(st store.Store, clock *storetest.Clock, pairing bool) (*gateway.Gateway, *kernel.Kernel, *people.Admin) {
	k := kernel.New(st, kernel.Config{})
	g := gateway.New(gateway.Config{Kernel: k, Store: st, Allowed: map[string][]string{gh.PlatformTelegram: {"7"}}, Pairing: pairing,
		Now: clock.Now, Logger: quiet})
	return g, k, people.NewAdmin(st, clock.Now)
}

// replies are the outbox rows of a session that no event stands behind.
func pairingReplies(t *testing.T, st store.Store, session string) []string {
	t.Helper()
	rows, err := st.ListOutbox(context.Background(), store.OutboxFilter{SessionID: session, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if r.Seq >= 0 || r.Kind != store.OutboxMessage {
			t.Fatalf("a stranger's session holds an outbox row of an event: %+v", r)
		}
		var p struct{ Text string }
		json.Unmarshal(r.Payload, &p)
		out = append(out, p.Text)
	}
	return out
}

func TestPairingLetsAStrangerInUntilRevoked(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		g, k, admin := pairingGateway(st, clock, true)
		session := chat.SessionFor(gh.PlatformTelegram, "8", "")

		r, err := g.Receive(ctx, msg("1", "8", "8", "hello, may I?"))
		if err != nil || r.Outcome != chat.ReceiveDropped || r.Reason != chat.ReasonPairing || r.SessionID != session {
			t.Fatalf("a stranger's first message: %+v %v", r, err)
		}
		row, _, _ := st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "1")
		code := codeRE.FindString(row.Detail)
		if code == "" || !strings.Contains(row.Detail, "sent") {
			t.Fatalf("the receive log shows no code: %q", row.Detail)
		}
		replies := pairingReplies(t, st, session)
		if len(replies) != 1 || !strings.Contains(replies[0], code) {
			t.Fatalf("the code is not sent back once: %q", replies)
		}
		if evs, _ := k.Events(ctx, session, 0, 10); len(evs) != 0 {
			t.Fatalf("a stranger's message reached the log: %+v", evs)
		}
		pending, _ := admin.List(ctx)
		if len(pending.Pending) != 1 || pending.Pending[0].Code != code || pending.Pending[0].UserID != "8" || pending.Pending[0].Text != "hello, may I?" ||
			!pending.Pending[0].Created.Equal(clock.Now()) || len(pending.People) != 0 {
			t.Fatalf("pending: %+v", pending)
		}

		// Writing again while the code is live: dropped, no second code.
		clock.Advance(time.Minute)
		r, err = g.Receive(ctx, msg("2", "8", "8", "hello??"))
		row, _, _ = st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "2")
		if err != nil || r.Reason != chat.ReasonPairing || !strings.Contains(row.Detail, code) || !strings.Contains(row.Detail, "not sent again") {
			t.Fatalf("a second message: %+v %q %v", r, row.Detail, err)
		}
		if n := len(pairingReplies(t, st, session)); n != 1 {
			t.Fatalf("%d codes sent, want 1", n)
		}
		// In a group the stranger gets no code.
		group := msg("3", "-100", "8", "hi all")
		group.ChatType = gh.ChatGroup
		if r, err := g.Receive(ctx, group); err != nil || r.Reason != chat.ReasonNotAllowed {
			t.Fatalf("a stranger in a group: %+v %v", r, err)
		}

		// Approved (as typed: lower case, a dash): the next message is handed on.
		typed := strings.ToLower(code[:4] + "-" + code[4:])
		p, err := admin.Approve(ctx, typed, "cli:ops")
		if err != nil || p.Platform != gh.PlatformTelegram || p.UserID != "8" || p.UserName != "u8" || p.Code != code || p.ApprovedBy != "cli:ops" {
			t.Fatalf("approve: %+v %v", p, err)
		}
		if _, err := admin.Approve(ctx, code, "again"); !gh.IsCode(err, gh.CodeConflict) {
			t.Fatalf("approving twice: %v", err)
		}
		r, err = g.Receive(ctx, msg("4", "8", "8", "thanks, now a question"))
		if err != nil || r.Outcome != chat.ReceiveHandedOn || r.SessionID != session {
			t.Fatalf("after approval: %+v %v", r, err)
		}
		if evs, _ := k.Events(ctx, session, 0, 10); len(evs) != 1 || !strings.Contains(string(evs[0].Payload), "now a question") {
			t.Fatalf("the person's message in the log: %+v", evs)
		}
		list, _ := admin.List(ctx)
		if len(list.Pending) != 0 || len(list.People) != 1 || list.People[0].UserID != "8" {
			t.Fatalf("after approval: %+v", list)
		}

		// Revoked: the next message is a stranger's again.
		if err := admin.Revoke(ctx, gh.PlatformTelegram, "8"); err != nil {
			t.Fatal(err)
		}
		if err := admin.Revoke(ctx, gh.PlatformTelegram, "8"); !gh.IsCode(err, gh.CodeNotFound) {
			t.Fatalf("revoking twice: %v", err)
		}
		r, err = g.Receive(ctx, msg("5", "8", "8", "still there?"))
		if err != nil || r.Outcome != chat.ReceiveDropped || r.Reason != chat.ReasonPairing {
			t.Fatalf("after revocation: %+v %v", r, err)
		}
		if evs, _ := k.Events(ctx, session, 0, 10); len(evs) != 1 {
			t.Fatalf("a revoked person's message reached the log: %+v", evs)
		}
	})
}

func TestPairingCodesExpireAndAreRateLimited(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		g, _, admin := pairingGateway(st, clock, true)
		session := chat.SessionFor(gh.PlatformTelegram, "9", "")
		codeOf := func(update string) string {
			row, _, _ := st.ReceiveByUpdate(ctx, gh.PlatformTelegram, update)
			return codeRE.FindString(row.Detail)
		}
		if _, err := admin.Approve(ctx, "ABCD2345", "x"); !gh.IsCode(err, gh.CodeUnknownPairingCode) {
			t.Fatalf("an unknown code: %v", err)
		}
		if _, err := admin.Approve(ctx, "not a code", "x"); !gh.IsCode(err, gh.CodeUnknownPairingCode) {
			t.Fatalf("not a code: %v", err)
		}
		g.Receive(ctx, msg("1", "9", "9", "hi"))
		first := codeOf("1")
		// Past its expiry a code cannot be approved; the next message gets
		// a new one.
		clock.Advance(people.PairingCodeTTL)
		if _, err := admin.Approve(ctx, first, "x"); !gh.IsCode(err, gh.CodePairingCodeExpired) {
			t.Fatalf("an expired code: %v", err)
		}
		g.Receive(ctx, msg("2", "9", "9", "hi again"))
		second := codeOf("2")
		if second == "" || second == first {
			t.Fatalf("after expiry: codes %q then %q", first, second)
		}
		// Let in and out again and again: at most PairingCodesPerHour codes
		// an hour, then silence.
		code := second
		for i := range people.PairingCodesPerHour - 1 {
			if _, err := admin.Approve(ctx, code, "x"); err != nil {
				t.Fatal(err)
			}
			if err := admin.Revoke(ctx, gh.PlatformTelegram, "9"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			up := fmt.Sprint(10 + i)
			g.Receive(ctx, msg(up, "9", "9", "me again"))
			if code = codeOf(up); code == "" {
				t.Fatalf("code %d not given", i+2)
			}
		}
		admin.Approve(ctx, code, "x")
		admin.Revoke(ctx, gh.PlatformTelegram, "9")
		clock.Advance(time.Minute)
		r, err := g.Receive(ctx, msg("20", "9", "9", "and again"))
		row, _, _ := st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "20")
		if err != nil || r.Reason != chat.ReasonPairing || codeRE.MatchString(row.Detail) || !strings.Contains(row.Detail, "limit") {
			t.Fatalf("over the limit: %+v %q %v", r, row.Detail, err)
		}
		if n := len(pairingReplies(t, st, session)); n != people.PairingCodesPerHour+1 {
			t.Fatalf("%d replies, want %d (one per code given)", n, people.PairingCodesPerHour+1)
		}
		// An hour on, codes are given again.
		clock.Advance(time.Hour)
		g.Receive(ctx, msg("21", "9", "9", "a new day"))
		if codeOf("21") == "" {
			t.Fatal("no code an hour after the limit")
		}
	})
}

func TestWithoutPairingStrangersAreDroppedAsBefore(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		g, _, admin := pairingGateway(st, clock, false)
		r, err := g.Receive(ctx, msg("1", "8", "8", "let me in"))
		row, _, _ := st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "1")
		if err != nil || r.Reason != chat.ReasonNotAllowed || codeRE.MatchString(row.Detail) {
			t.Fatalf("pairing off: %+v %q %v", r, row.Detail, err)
		}
		if rows, _ := st.ListOutbox(ctx, store.OutboxFilter{Limit: 10}); len(rows) != 0 {
			t.Fatalf("a reply to a stranger with pairing off: %+v", rows)
		}
		if list, _ := admin.List(ctx); len(list.Pending) != 0 {
			t.Fatalf("a code with pairing off: %+v", list)
		}
		// Someone let in directly is allowed whether pairing is on or not.
		if _, _, err := admin.Allow(ctx, gh.PlatformTelegram, "8", "api"); err != nil {
			t.Fatal(err)
		}
		if r, err := g.Receive(ctx, msg("2", "8", "8", "hello")); err != nil || r.Outcome != chat.ReceiveHandedOn {
			t.Fatalf("let in directly: %+v %v", r, err)
		}
		if _, _, err := admin.Allow(ctx, "myspace", "8", "api"); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("an unknown platform: %v", err)
		}
	})
}

// Many messages of one stranger at once (a burst, or one platform
// delivering to two replicas) give one code and one reply.
func TestPairingBurstGivesOneCode(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		g, _, admin := pairingGateway(st, clock, true)
		g2, _, _ := pairingGateway(st, clock, true)
		var wg sync.WaitGroup
		for i := range 30 {
			gw := g
			if i%2 == 1 {
				gw = g2
			}
			wg.Go(func() {
				if r, err := gw.Receive(ctx, msg(fmt.Sprint(100+i), "8", "8", fmt.Sprint("knock ", i))); err != nil || r.Reason != chat.ReasonPairing {
					t.Errorf("message %d: %+v %v", i, r, err)
				}
			})
		}
		wg.Wait()
		if n := len(pairingReplies(t, st, chat.SessionFor(gh.PlatformTelegram, "8", ""))); n != 1 {
			t.Fatalf("%d replies to a burst, want 1", n)
		}
		if list, _ := admin.List(ctx); len(list.Pending) != 1 {
			t.Fatalf("pending codes: %+v", list.Pending)
		}
	})
}

// Through the real Telegram adapter and its fake: the code arrives in the
// stranger's chat once, no model is asked; once let in, they are answered
// and may decide their own approval; revoked, their press counts no more.
func TestPairedPersonIsAnsweredAndMayPress(t *testing.T) {
	e, fake := telegramEnv(t, telegramtest.TelegramOptions{}, stacktest.EnvOptions{Pairing: true})
	admin := people.NewAdmin(e.Store, nil)
	upd := fake.Say("bob", "bob", "hello?", false)
	if row := e.Receive(upd); row.Reason != chat.ReasonPairing {
		t.Fatalf("a stranger's message: %+v", row)
	}
	var code string
	e.Eventually("the code in bob's chat", func() bool {
		for _, m := range fake.Messages("bob") {
			code = codeRE.FindString(m.Text)
		}
		return code != ""
	})
	fake.Say("bob", "bob", "did you get that?", false)
	time.Sleep(300 * time.Millisecond) // room for a second reply, if one were coming
	if got := texts(fake, "bob"); len(got) != 1 {
		t.Fatalf("bob's chat holds %q; want the code once", got)
	}
	if n := len(e.Model.Requests()); n != 0 {
		t.Fatalf("a stranger's message reached the model (%d requests)", n)
	}
	if _, err := admin.Approve(e.Ctx, code, "test"); err != nil {
		t.Fatal(err)
	}
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_1", Name: "post_note", Arguments: `{"text":"x"}`}}}, modeltest.Reply{Text: "Posted."})
	fake.Say("bob", "bob", "post a note", false)
	card := func() (string, string) {
		var data, id string
		e.Eventually("the card in bob's chat", func() bool {
			for _, m := range fake.Messages("bob") {
				for _, b := range m.Buttons {
					if _, c, ok := chat.ParseButtonData(b); ok && c == chat.ChoiceApprove {
						data, id = b, m.ID
					}
				}
			}
			return data != ""
		})
		return data, id
	}
	data, id := card()
	if reply, err := fake.Press("bob", id, data, "bob"); err != nil || !strings.Contains(reply, "Approved") {
		t.Fatalf("a paired person's press: %q %v", reply, err)
	}
	e.Eventually("the answer", func() bool { return slicesContains(texts(fake, "bob"), "Posted.") })
	// Revoked: a press on a new card is refused, and messages go nowhere.
	e.Model.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_2", Name: "post_note", Arguments: `{"text":"y"}`}}}, modeltest.Reply{Text: "Posted again."})
	fake.Say("bob", "bob", "another note", false)
	e.Eventually("the second card", func() bool {
		n := 0
		for _, m := range fake.Messages("bob") {
			if len(m.Buttons) > 0 {
				n++
			}
		}
		return n == 1 && e.Posted.Load() == 1
	})
	data2, id2 := card()
	if err := admin.Revoke(e.Ctx, gh.PlatformTelegram, fake.UserID("bob")); err != nil {
		t.Fatal(err)
	}
	if reply, err := fake.Press("bob", id2, data2, "bob"); err != nil || !strings.Contains(reply, "not allowed") {
		t.Fatalf("a revoked person's press: %q %v", reply, err)
	}
	row := e.Receive(fake.Say("bob", "bob", "hello again", false))
	if row.Outcome != chat.ReceiveDropped || row.Reason != chat.ReasonPairing {
		t.Fatalf("a revoked person's message: %+v", row)
	}
	if e.Posted.Load() != 1 {
		t.Fatalf("posted %d notes, want 1", e.Posted.Load())
	}
}
