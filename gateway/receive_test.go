package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

func newGateway(st store.Store, allowed ...string) (*gateway.Gateway, *kernel.Kernel) {
	k := kernel.New(st, kernel.Config{})
	if allowed == nil {
		allowed = []string{"*"}
	}
	return gateway.New(gateway.Config{Kernel: k, Store: st, Allowed: map[string][]string{gh.PlatformTelegram: allowed}, Logger: quiet}), k
}

func msg(update, chat, user, text string) gh.Inbound {
	return gh.Inbound{Platform: gh.PlatformTelegram, UpdateID: update, ChatID: chat, ChatType: gh.ChatDM, UserID: user, UserName: "u" + user,
		MessageID: "m" + update, Text: text}
}

func TestRedeliveriesAtOnceMakeOneEventAndOneRunEach(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		g, k := newGateway(st)
		ctx := context.Background()
		const updates, copies = 60, 4
		var wg sync.WaitGroup
		errs := make(chan error, updates*copies)
		for u := range updates {
			for range copies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := g.Receive(ctx, msg(fmt.Sprint(1000+u), fmt.Sprint(u), "7", fmt.Sprintf("update %d", u))); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("receive: %v", err)
		}
		runs := map[int64]bool{}
		for u := range updates {
			session := chat.SessionFor(gh.PlatformTelegram, fmt.Sprint(u), "")
			evs, err := k.Events(ctx, session, 0, 100)
			if err != nil || len(evs) != 1 || evs[0].Kind != gh.KindUserMessage || !strings.Contains(string(evs[0].Payload), fmt.Sprintf("update %d", u)) {
				t.Fatalf("update %d delivered %d times: events %+v %v", u, copies, evs, err)
			}
			run, ok, err := k.LatestRun(ctx, session)
			if err != nil || !ok || run.State != gh.RunQueued {
				t.Fatalf("update %d: run %+v %v %v", u, run, ok, err)
			}
			runs[run.ID] = true
		}
		if len(runs) != updates {
			t.Fatalf("%d runs for %d updates", len(runs), updates)
		}
		dup, _ := st.ListReceive(ctx, store.ReceiveFilter{Reason: chat.ReasonDuplicate, Limit: 1000})
		handed, _ := st.ListReceive(ctx, store.ReceiveFilter{Outcome: chat.ReceiveHandedOn, Limit: 1000})
		if len(dup) != updates*(copies-1) || len(handed) != updates {
			t.Fatalf("receive log: %d handed on, %d duplicates; want %d and %d", len(handed), len(dup), updates, updates*(copies-1))
		}
	})
}

func TestFloodCountIsExactUnderConcurrency(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		g, _ := newGateway(st)
		ctx := context.Background()
		// The chat's first message creates its address row.
		if _, err := g.Receive(ctx, msg("0", "42", "7", "first")); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		outcomes := map[string]int{}
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := g.Receive(ctx, msg(fmt.Sprint(i+1), "42", "7", "spam"))
				if err != nil {
					t.Errorf("receive: %v", err)
					return
				}
				mu.Lock()
				outcomes[r.Outcome+"/"+r.Reason]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if outcomes["handed_on/"] != 29 || outcomes["dropped/flood"] != 11 {
			t.Fatalf("41 messages at once from one chat: %v; want 30 handed on in all, the rest flood", outcomes)
		}
		// Another chat is unaffected.
		if r, err := g.Receive(ctx, msg("x", "43", "7", "hello")); err != nil || r.Outcome != chat.ReceiveHandedOn {
			t.Fatalf("another chat: %+v %v", r, err)
		}
	})
}

func TestDropsCarryTheirReasonAndCommitNothingElse(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		g, k := newGateway(st, "7")
		bot := msg("1", "42", "7", "beep")
		bot.IsBot = true
		sticker := msg("3", "42", "7", "")
		sticker.Unsupported = "sticker"
		for _, c := range []struct {
			in     gh.Inbound
			reason string
		}{
			{bot, chat.ReasonFromBot},
			{msg("2", "42", "8", "let me in"), chat.ReasonNotAllowed},
			{sticker, chat.ReasonUnsupported},
			{msg("4", "42", "7", "   \n "), chat.ReasonEmpty},
		} {
			r, err := g.Receive(ctx, c.in)
			if err != nil || r.Outcome != chat.ReceiveDropped || r.Reason != c.reason {
				t.Fatalf("update %s: %+v %v, want dropped/%s", c.in.UpdateID, r, err, c.reason)
			}
		}
		session := chat.SessionFor(gh.PlatformTelegram, "42", "")
		if evs, _ := k.Events(ctx, session, 0, 10); len(evs) != 0 {
			t.Fatalf("dropped updates committed events: %+v", evs)
		}
		row, _, _ := st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "2")
		if !strings.Contains(row.Detail, "TELEGRAM_ALLOWED_USERS") {
			t.Fatalf("a not_allowed drop says how to allow: %q", row.Detail)
		}
		// Nobody allowed at all: the detail says so.
		g2 := gateway.New(gateway.Config{Kernel: k, Store: st, Logger: quiet})
		r, err := g2.Receive(ctx, msg("9", "42", "7", "hi"))
		row, _, _ = st.ReceiveByUpdate(ctx, gh.PlatformTelegram, "9")
		if err != nil || r.Reason != chat.ReasonNotAllowed || !strings.Contains(row.Detail, "nobody is allowed") {
			t.Fatalf("with no allow-list: %+v %+v %v", r, row, err)
		}
	})
}

// A malformed update is dropped as unsupported with what was wrong, never
// refused with an error: the platform would deliver it again forever and
// hold up the chat behind it.
func TestMalformedUpdatesAreDroppedNotRefused(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		g, _ := newGateway(st)
		for i, in := range []gh.Inbound{
			{Platform: gh.PlatformTelegram, ChatID: "1", UserID: "7", Text: "no update id"},
			{UpdateID: "1", ChatID: "1", UserID: "7", Text: "no platform"},
			{Platform: gh.PlatformTelegram, UpdateID: strings.Repeat("9", 500), ChatID: "1", UserID: "7", Text: "huge id"},
			{Platform: gh.PlatformTelegram, UpdateID: "2", ChatID: "1\x00", UserID: "7", Text: "NUL in id"},
		} {
			r, err := g.Receive(ctx, in)
			if err != nil || r.Outcome != chat.ReceiveDropped || r.Reason != chat.ReasonUnsupported {
				t.Fatalf("malformed update %d: %+v %v", i, r, err)
			}
		}
		rows, _ := st.ListReceive(ctx, store.ReceiveFilter{Reason: chat.ReasonUnsupported, Limit: 10})
		if len(rows) != 4 || !strings.Contains(rows[0].Detail, "malformed") {
			t.Fatalf("each malformed update is logged with its reason: %+v", rows)
		}
		// Delivered again, it is a duplicate, not a second row of its own.
		if r, err := g.Receive(ctx, gh.Inbound{Platform: gh.PlatformTelegram, ChatID: "1", UserID: "7", Text: "no update id"}); err != nil || r.Reason != chat.ReasonDuplicate {
			t.Fatalf("a malformed update delivered again: %+v %v", r, err)
		}
		// NUL bytes and bad UTF-8 in text are cleaned, not refused.
		r, err := g.Receive(ctx, msg("5", "1", "7", "hi\x00 there \xff"))
		if err != nil || r.Outcome != chat.ReceiveHandedOn {
			t.Fatalf("odd text: %+v %v", r, err)
		}
	})
}

func TestGuideWithNoLiveTurnIsQueued(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		k := kernel.New(st, kernel.Config{})
		g := gateway.New(gateway.Config{Kernel: k, Store: st, Allowed: map[string][]string{gh.PlatformTelegram: {"*"}}, MidTurn: gh.DeliveryGuide, Logger: quiet})
		r, err := g.Receive(ctx, msg("1", "1", "7", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		evs, _ := k.Events(ctx, r.SessionID, 0, 10)
		var u gh.UserMessage
		if len(evs) != 1 || json.Unmarshal(evs[0].Payload, &u) != nil || u.Delivery != gh.DeliveryQueue || u.RequestedDelivery != gh.DeliveryGuide {
			t.Fatalf("a guide with no running turn waits as a queued input: %s", evs[0].Payload)
		}
		if u.Source != gh.PlatformTelegram || u.User == "" || strings.Contains(u.User, "7") && len(u.User) < 4 {
			t.Fatalf("the log names the platform and a user key: %+v", u)
		}
	})
}

var quiet = slog.New(slog.DiscardHandler)

// A redelivery that comes after its receive row was pruned is still a
// duplicate: the log keeps the update's key.
func TestRedeliveryAfterPruningIsStillADuplicate(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		g, k := newGateway(st)
		first, err := g.Receive(ctx, msg("77", "42", "7", "once"))
		if err != nil || first.Outcome != chat.ReceiveHandedOn {
			t.Fatalf("first: %+v %v", first, err)
		}
		if n, err := st.PruneGateway(ctx, time.Now().Add(time.Hour), 100); err != nil || n != 1 {
			t.Fatalf("prune: %d %v", n, err)
		}
		again, err := g.Receive(ctx, msg("77", "42", "7", "once"))
		if err != nil || again.Outcome != chat.ReceiveDropped || again.Reason != chat.ReasonDuplicate || again.Seq != first.Seq {
			t.Fatalf("redelivery after pruning: %+v %v", again, err)
		}
		if evs, _ := k.Events(ctx, first.SessionID, 0, 10); len(evs) != 1 {
			t.Fatalf("%d events after a pruned redelivery", len(evs))
		}
	})
}
