package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Conformance of the gateway's rows: the receive log (one first row per
// update, duplicates beside it), the address book (one session per chat,
// row locked per receive), the outbox (one row per event, a session's rows
// in seq order, each claimed once), gate cards and platform leases.

func testGateway(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"ReceiveLogFirstRowOnce", testReceiveFirstOnce},
		{"ReceiveLogConcurrentFirstRow", testReceiveConcurrent},
		{"ReceiveLogListsAndCounts", testReceiveLists},
		{"AddressBook", testAddressBook},
		{"AddressFirstMessagesAtOnce", testAddressConcurrent},
		{"OutboxOrderAndClaims", testOutbox},
		{"OutboxClaimedOnce", testOutboxClaimedOnce},
		{"GateCardsAndLeases", testCardsAndLeases},
		{"ReceiveRollsBackWithTx", testReceiveRollback},
		{"PruneKeepsWhatIsOpen", testPrune},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

var gwT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func recv(update, chat, outcome, reason string, at time.Time) store.ReceiveEntry {
	return store.ReceiveEntry{Platform: "telegram", UpdateID: update, ChatID: chat, UserID: "u1", UserName: "alice", MessageID: "m" + update,
		Text: "hello " + update, Outcome: outcome, Reason: reason, ReceivedAt: at}
}

func testReceiveFirstOnce(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	first, ok, err := st.InsertReceive(ctx, recv("100", "c1", "handed_on", "", gwT0))
	if err != nil || !ok || first.ID == 0 {
		t.Fatalf("first insert: %+v %v %v", first, ok, err)
	}
	again, ok, err := st.InsertReceive(ctx, recv("100", "c1", "dropped", "flood", gwT0.Add(time.Second)))
	if err != nil || ok || again.ID != first.ID || again.Outcome != "handed_on" {
		t.Fatalf("second first-row for the same update must not be written: %+v %v %v", again, ok, err)
	}
	for i := range 2 {
		d, ok, err := st.InsertReceive(ctx, recv("100", "c1", "dropped", "duplicate", gwT0.Add(time.Duration(i+2)*time.Second)))
		if err != nil || !ok || d.ID == first.ID {
			t.Fatalf("duplicate rows are always written: %+v %v %v", d, ok, err)
		}
	}
	got, ok, err := st.ReceiveByUpdate(ctx, "telegram", "100")
	if err != nil || !ok || got.ID != first.ID || got.Text != "hello 100" || got.UserName != "alice" || !got.ReceivedAt.Equal(gwT0) {
		t.Fatalf("ReceiveByUpdate = %+v %v %v", got, ok, err)
	}
	if _, ok, _ := st.ReceiveByUpdate(ctx, "discord", "100"); ok {
		t.Fatal("update ids are per platform")
	}
	all, err := st.ListReceive(ctx, store.ReceiveFilter{Limit: 10})
	if err != nil || len(all) != 3 {
		t.Fatalf("want 3 rows (first + 2 duplicates), got %d %v", len(all), err)
	}
}

func testReceiveConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	var wg sync.WaitGroup
	var inserted atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := st.InsertReceive(ctx, recv("7", "c1", "handed_on", "", gwT0.Add(time.Duration(i)*time.Millisecond)))
			if err != nil {
				t.Errorf("insert: %v", err)
			}
			if ok {
				inserted.Add(1)
			}
		}()
	}
	wg.Wait()
	if inserted.Load() != 1 {
		t.Fatalf("12 concurrent first rows of one update: %d written, want 1", inserted.Load())
	}
}

func testReceiveLists(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for i, r := range []store.ReceiveEntry{
		recv("1", "c1", "handed_on", "", gwT0),
		recv("2", "c1", "handed_on", "", gwT0.Add(30*time.Second)),
		recv("3", "c1", "dropped", "flood", gwT0.Add(40*time.Second)),
		recv("4", "c2", "handed_on", "", gwT0.Add(50*time.Second)),
		recv("5", "c1", "dropped", "not_allowed", gwT0.Add(55*time.Second)),
	} {
		if _, ok, err := st.InsertReceive(ctx, r); err != nil || !ok {
			t.Fatalf("insert %d: %v %v", i, ok, err)
		}
	}
	n, err := st.CountHandedOn(ctx, "telegram", "c1", gwT0.Add(10*time.Second))
	if err != nil || n != 1 {
		t.Fatalf("handed on in c1 since t0+10s = %d, want 1 (drops and other chats do not count) %v", n, err)
	}
	dropped, err := st.ListReceive(ctx, store.ReceiveFilter{Outcome: "dropped", Limit: 10})
	if err != nil || len(dropped) != 2 || dropped[0].UpdateID != "5" || dropped[1].Reason != "flood" {
		t.Fatalf("dropped, newest first: %+v %v", dropped, err)
	}
	page, err := st.ListReceive(ctx, store.ReceiveFilter{Platform: "telegram", Before: dropped[0].ID, Limit: 2})
	if err != nil || len(page) != 2 || page[0].UpdateID != "4" {
		t.Fatalf("page before the newest: %+v %v", page, err)
	}
	if rows, _ := st.ListReceive(ctx, store.ReceiveFilter{Platform: "slack", Limit: 10}); len(rows) != 0 {
		t.Fatalf("platform filter leaked %d rows", len(rows))
	}
	last, ok, err := st.LastReceive(ctx, "telegram")
	if err != nil || !ok || last.UpdateID != "5" || last.Reason != "not_allowed" {
		t.Fatalf("last = %+v %v %v", last, ok, err)
	}
	if _, ok, _ := st.LastReceive(ctx, "discord"); ok {
		t.Fatal("no discord rows")
	}
}

func gwSession(t *testing.T, st store.Store, id string) {
	t.Helper()
	if _, _, err := st.CreateSession(context.Background(), gh.Session{ID: id, Tenant: gh.DefaultTenant, Created: gwT0}); err != nil {
		t.Fatal(err)
	}
}

func gwAppend(t *testing.T, st store.Store, session string, n int) {
	t.Helper()
	for i := range n {
		p, _ := json.Marshal(gh.UserMessage{Text: fmt.Sprint("m", i), Delivery: gh.DeliveryQueue})
		if _, err := st.Append(context.Background(), store.AppendParams{SessionID: session, Tenant: gh.DefaultTenant, Kind: gh.KindUserMessage,
			Payload: p, Now: gwT0, Input: true}); err != nil {
			t.Fatal(err)
		}
	}
}

func testAddressBook(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	a := store.AddressEntry{SessionID: "tg-a", Address: gh.Address{Platform: "telegram", ChatID: "42", ChatType: "dm", ReplyTo: "m1"}, UserID: "u1", Updated: gwT0}
	got, created, err := st.UpsertAddress(ctx, a)
	if err != nil || !created || got.SessionID != "tg-a" || got.ReplyTo != "m1" {
		t.Fatalf("create: %+v %v %v", got, created, err)
	}
	b := a
	b.SessionID, b.ReplyTo, b.UserID, b.Updated = "tg-other", "m2", "", gwT0.Add(time.Minute)
	got, created, err = st.UpsertAddress(ctx, b)
	if err != nil || created || got.SessionID != "tg-a" || got.ReplyTo != "m2" || got.UserID != "u1" {
		t.Fatalf("a chat keeps its session; reply-to moves, an empty user id does not erase: %+v %v %v", got, created, err)
	}
	c := a
	c.SessionID, c.ThreadID = "tg-a-topic", "9"
	if got, created, err = st.UpsertAddress(ctx, c); err != nil || !created || got.SessionID != "tg-a-topic" {
		t.Fatalf("a thread is its own session: %+v %v %v", got, created, err)
	}
	byS, ok, err := st.AddressBySession(ctx, "tg-a")
	if err != nil || !ok || byS.ChatID != "42" || byS.ReplyTo != "m2" || byS.Platform != "telegram" {
		t.Fatalf("by session: %+v %v %v", byS, ok, err)
	}
	if _, ok, _ := st.AddressBySession(ctx, "nope"); ok {
		t.Fatal("unknown session has no address")
	}
	gwSession(t, st, "tg-a")
	gwSession(t, st, "tg-a-topic")
	if behind, err := st.AddressesBehind(ctx, 10); err != nil || len(behind) != 0 {
		t.Fatalf("empty logs are not behind: %+v %v", behind, err)
	}
	gwAppend(t, st, "tg-a", 3)
	behind, err := st.AddressesBehind(ctx, 10)
	if err != nil || len(behind) != 1 || behind[0].SessionID != "tg-a" || behind[0].Cursor != 0 {
		t.Fatalf("behind: %+v %v", behind, err)
	}
	if err := st.AdvanceCursor(ctx, "tg-a", 3, gwT0); err != nil {
		t.Fatal(err)
	}
	if err := st.AdvanceCursor(ctx, "tg-a", 1, gwT0); err != nil {
		t.Fatal(err)
	}
	byS, _, _ = st.AddressBySession(ctx, "tg-a")
	if byS.Cursor != 3 {
		t.Fatalf("cursor = %d, want 3 (never moves down)", byS.Cursor)
	}
	if behind, _ := st.AddressesBehind(ctx, 10); len(behind) != 0 {
		t.Fatalf("caught up, still behind: %+v", behind)
	}
}

func outboxRow(session string, seq int64, at time.Time) store.OutboxEntry {
	return store.OutboxEntry{SessionID: session, Seq: seq, Platform: "telegram", Kind: store.OutboxMessage,
		Payload: json.RawMessage(fmt.Sprintf(`{"text":"reply %d"}`, seq)), AvailableAt: at, Created: at}
}

func testOutbox(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for _, r := range []store.OutboxEntry{outboxRow("s1", 3, gwT0), outboxRow("s1", 5, gwT0), outboxRow("s2", 4, gwT0.Add(time.Hour))} {
		if ok, err := st.EnqueueOutbox(ctx, r); err != nil || !ok {
			t.Fatalf("enqueue: %v %v", ok, err)
		}
	}
	if ok, err := st.EnqueueOutbox(ctx, outboxRow("s1", 3, gwT0)); err != nil || ok {
		t.Fatalf("a second row for (s1, 3) must not be written: %v %v", ok, err)
	}
	due, err := st.OutboxDue(ctx, "telegram", gwT0, 10)
	if err != nil || len(due) != 1 || due[0].Seq != 3 || string(due[0].Payload) == "" {
		t.Fatalf("due at t0: only s1's head (s2 is not available yet): %+v %v", due, err)
	}
	if d, _ := st.OutboxDue(ctx, "discord", gwT0, 10); len(d) != 0 {
		t.Fatal("other platform's rows are not due")
	}
	row, ok, err := st.ClaimOutbox(ctx, due[0].ID, "w1", gwT0, gwT0.Add(time.Minute))
	if err != nil || !ok || row.State != store.OutboxSending || row.Owner != "w1" {
		t.Fatalf("claim: %+v %v %v", row, ok, err)
	}
	if _, ok, _ := st.ClaimOutbox(ctx, due[0].ID, "w2", gwT0, gwT0.Add(time.Minute)); ok {
		t.Fatal("a claimed row cannot be claimed again")
	}
	if d, _ := st.OutboxDue(ctx, "telegram", gwT0, 10); len(d) != 0 {
		t.Fatalf("s1's next row must wait while its head is sending: %+v", d)
	}
	if stuck, _ := st.OutboxStuck(ctx, "telegram", gwT0.Add(2*time.Minute), 10); len(stuck) != 1 {
		t.Fatalf("a sending row past its lease is stuck: %+v", stuck)
	}
	bad := row
	bad.Owner, bad.State = "w2", store.OutboxSent
	if ok, err := st.UpdateOutbox(ctx, bad); err != nil || ok {
		t.Fatalf("only the owner may settle a row: %v %v", ok, err)
	}
	row.State, row.PartsSent, row.MessageIDs, row.Updated = store.OutboxSent, 2, []string{"11", "12"}, gwT0
	if ok, err := st.UpdateOutbox(ctx, row); err != nil || !ok {
		t.Fatalf("settle: %v %v", ok, err)
	}
	due, _ = st.OutboxDue(ctx, "telegram", gwT0.Add(2*time.Hour), 10)
	if len(due) != 2 || due[0].Seq != 5 && due[1].Seq != 5 {
		t.Fatalf("after s1/3 is sent, s1/5 and s2/4 are due: %+v", due)
	}
	list, err := st.ListOutbox(ctx, store.OutboxFilter{SessionID: "s1", Limit: 10})
	if err != nil || len(list) != 2 || list[1].State != store.OutboxSent || len(list[1].MessageIDs) != 2 || list[1].PartsSent != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	// A retry later: back to pending with a later availability.
	r5 := due[0]
	if r5.Seq != 5 {
		r5 = due[1]
	}
	r5, _, _ = st.ClaimOutbox(ctx, r5.ID, "w1", gwT0, gwT0.Add(time.Minute))
	r5.State, r5.Attempts, r5.LastError, r5.AvailableAt = store.OutboxPending, 1, "429", gwT0.Add(3*time.Hour)
	if ok, err := st.UpdateOutbox(ctx, r5); err != nil || !ok {
		t.Fatal(ok, err)
	}
	due, _ = st.OutboxDue(ctx, "telegram", gwT0.Add(2*time.Hour), 10)
	if len(due) != 1 || due[0].SessionID != "s2" {
		t.Fatalf("a rescheduled row waits for its time: %+v", due)
	}
	if dead, _ := st.ListOutbox(ctx, store.OutboxFilter{State: store.OutboxPending, Limit: 10}); len(dead) != 2 {
		t.Fatalf("pending filter: %+v", dead)
	}
	if n, err := st.CountOutbox(ctx, "telegram", store.OutboxPending); err != nil || n != 2 {
		t.Fatalf("pending count: %d %v", n, err)
	}
	if n, _ := st.CountOutbox(ctx, "telegram", store.OutboxSent); n != 1 {
		t.Fatalf("sent count: %d", n)
	}
	if n, _ := st.CountOutbox(ctx, "discord", store.OutboxPending); n != 0 {
		t.Fatalf("another platform's count: %d", n)
	}
}

func testOutboxClaimedOnce(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	if _, err := st.EnqueueOutbox(ctx, outboxRow("s1", 1, gwT0)); err != nil {
		t.Fatal(err)
	}
	due, _ := st.OutboxDue(ctx, "telegram", gwT0, 1)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := st.ClaimOutbox(ctx, due[0].ID, fmt.Sprint("w", i), gwT0, gwT0.Add(time.Minute))
			if err != nil {
				t.Errorf("claim: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claimers won one row", wins.Load())
	}
}

func testCardsAndLeases(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for _, c := range []store.GateCard{
		{GateID: "g1", SessionID: "s1", Platform: "telegram", ChatID: "42", MessageID: "7", Created: gwT0},
		{GateID: "g1", SessionID: "s1", Platform: "telegram", ChatID: "42", MessageID: "7", Created: gwT0},
		{GateID: "g1", SessionID: "s1", Platform: "telegram", ChatID: "42", MessageID: "9", Created: gwT0.Add(time.Second)},
	} {
		if err := st.PutGateCard(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	cards, err := st.GateCards(ctx, "g1")
	if err != nil || len(cards) != 2 || cards[0].MessageID != "7" || cards[1].MessageID != "9" {
		t.Fatalf("cards: %+v %v", cards, err)
	}
	if c, _ := st.GateCards(ctx, "g2"); len(c) != 0 {
		t.Fatal("no cards for g2")
	}
	if ok, err := st.AcquirePlatformLease(ctx, "telegram", "r1", gwT0, gwT0.Add(30*time.Second)); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if ok, _ := st.AcquirePlatformLease(ctx, "telegram", "r2", gwT0.Add(10*time.Second), gwT0.Add(40*time.Second)); ok {
		t.Fatal("a live lease cannot be taken")
	}
	if ok, _ := st.AcquirePlatformLease(ctx, "telegram", "r1", gwT0.Add(10*time.Second), gwT0.Add(40*time.Second)); !ok {
		t.Fatal("the holder renews")
	}
	if ok, _ := st.AcquirePlatformLease(ctx, "telegram", "r2", gwT0.Add(41*time.Second), gwT0.Add(70*time.Second)); !ok {
		t.Fatal("an expired lease is taken over")
	}
	l, ok, err := st.GetPlatformLease(ctx, "telegram")
	if err != nil || !ok || l.Owner != "r2" || !l.ExpiresAt.Equal(gwT0.Add(70*time.Second)) {
		t.Fatalf("lease: %+v %v %v", l, ok, err)
	}
	if err := st.ReleasePlatformLease(ctx, "telegram", "r1"); err != nil {
		t.Fatal(err)
	}
	if l, _, _ := st.GetPlatformLease(ctx, "telegram"); l.Owner != "r2" {
		t.Fatal("only the holder releases")
	}
	if err := st.ReleasePlatformLease(ctx, "telegram", "r2"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.AcquirePlatformLease(ctx, "telegram", "r3", gwT0.Add(42*time.Second), gwT0.Add(60*time.Second)); !ok {
		t.Fatal("a released lease is free")
	}
}

func testReceiveRollback(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	boom := fmt.Errorf("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, _, err := tx.UpsertAddress(ctx, store.AddressEntry{SessionID: "s", Address: gh.Address{Platform: "telegram", ChatID: "1"}, Updated: gwT0}); err != nil {
			return err
		}
		if _, _, err := tx.InsertReceive(ctx, recv("1", "1", "handed_on", "", gwT0)); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("InTx = %v", err)
	}
	if _, ok, _ := st.ReceiveByUpdate(ctx, "telegram", "1"); ok {
		t.Fatal("a rolled-back receive left its row")
	}
	if _, ok, _ := st.AddressBySession(ctx, "s"); ok {
		t.Fatal("a rolled-back receive left its address")
	}
}

func testAddressConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				a, c, err := tx.UpsertAddress(ctx, store.AddressEntry{SessionID: "tg-new", Updated: gwT0,
					Address: gh.Address{Platform: "telegram", ChatID: "77", ReplyTo: fmt.Sprint("m", i)}})
				if err == nil && a.SessionID != "tg-new" {
					err = fmt.Errorf("session %q", a.SessionID)
				}
				if c {
					created.Add(1)
				}
				return err
			})
			if err != nil {
				t.Errorf("first messages of one chat at once: %v", err)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d transactions created the chat's row, want 1", created.Load())
	}
}

func testPrune(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for i, at := range []time.Time{gwT0, gwT0.Add(time.Hour), gwT0.Add(48 * time.Hour)} {
		if _, _, err := st.InsertReceive(ctx, recv(fmt.Sprint(i), "c1", "handed_on", "", at)); err != nil {
			t.Fatal(err)
		}
	}
	// Outbox: one sent long ago, one dead long ago, one pending long ago,
	// one sent recently.
	for i := range 4 {
		if _, err := st.EnqueueOutbox(ctx, outboxRow("s1", int64(i+1), gwT0)); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := st.ListOutbox(ctx, store.OutboxFilter{Limit: 10})
	for _, r := range rows {
		if r.Seq == 3 {
			continue // stays pending
		}
		c, _, err := st.ClaimOutbox(ctx, r.ID, "w", gwT0, gwT0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		c.State, c.Updated = store.OutboxSent, gwT0
		if r.Seq == 2 {
			c.State = store.OutboxDead
		}
		if r.Seq == 4 {
			c.Updated = gwT0.Add(48 * time.Hour)
		}
		if _, err := st.UpdateOutbox(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.PruneGateway(ctx, gwT0.Add(24*time.Hour), 100)
	if err != nil || n != 4 {
		t.Fatalf("pruned %d rows (%v), want 2 receive rows and 2 outbox rows", n, err)
	}
	if left, _ := st.ListReceive(ctx, store.ReceiveFilter{Limit: 10}); len(left) != 1 || left[0].UpdateID != "2" {
		t.Fatalf("receive rows left: %+v", left)
	}
	left, _ := st.ListOutbox(ctx, store.OutboxFilter{Limit: 10})
	if len(left) != 2 {
		t.Fatalf("outbox rows left: %+v", left)
	}
	for _, r := range left {
		if r.Seq != 3 && r.Seq != 4 {
			t.Fatalf("pruned the wrong rows; left %+v", left)
		}
	}
}
