package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Conformance of pairing: one live code per sender (also when replicas give
// codes at once), codes unique across senders, an approval taken once,
// people kept until revoked — across a restart and on another replica.

func testPeople(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"OneLiveCodePerSender", testPairingOneLive},
		{"CodesAtOnceForOneSender", testPairingConcurrent},
		{"CodeClosedOnce", testPairingClose},
		{"CodeRollsBackWithTx", testPairingRollback},
		{"PeopleUntilRevoked", testPeopleKept},
		{"PersonZones", testPersonZones},
		{"PrunePairingCodes", testPairingPrune},
		{"OutboxReplyWithoutEvent", testOutboxNegativeSeq},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

var pairT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func pairingCode(code, user string, at time.Time) store.PairingCode {
	return store.PairingCode{Code: code, Platform: "telegram", UserID: user, UserName: "name " + user, ChatID: user, Text: "let me in",
		Created: at, ExpiresAt: at.Add(time.Hour)}
}

func testPairingOneLive(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	if ok, err := st.InsertPairingCode(ctx, pairingCode("AAAA2222", "u1", pairT0)); err != nil || !ok {
		t.Fatalf("first code: %v %v", ok, err)
	}
	// A second code while the first is live is not written.
	if ok, err := st.InsertPairingCode(ctx, pairingCode("BBBB3333", "u1", pairT0.Add(time.Minute))); err != nil || ok {
		t.Fatalf("second live code for one sender: %v %v", ok, err)
	}
	if _, err := st.GetPairingCode(ctx, "BBBB3333"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("the refused code was stored: %v", err)
	}
	got, err := st.GetPairingCode(ctx, "AAAA2222")
	if err != nil || got.State != store.PairingPending || got.UserID != "u1" || got.UserName != "name u1" || got.ChatID != "u1" ||
		got.Text != "let me in" || !got.Created.Equal(pairT0) || !got.ExpiresAt.Equal(pairT0.Add(time.Hour)) || !got.Closed.IsZero() {
		t.Fatalf("stored code %+v %v", got, err)
	}
	// The same code for another sender is taken.
	if _, err := st.InsertPairingCode(ctx, pairingCode("AAAA2222", "u2", pairT0)); !gh.IsCode(err, gh.CodeConflict) {
		t.Fatalf("a code taken by another sender: %v", err)
	}
	live, ok, err := st.LivePairingCode(ctx, "telegram", "u1", pairT0.Add(59*time.Minute))
	if err != nil || !ok || live.Code != "AAAA2222" {
		t.Fatalf("live code: %+v %v %v", live, ok, err)
	}
	if _, ok, _ := st.LivePairingCode(ctx, "discord", "u1", pairT0); ok {
		t.Fatal("codes are per platform")
	}
	if pending, err := st.PendingPairingCodes(ctx, pairT0.Add(time.Minute), 10); err != nil || len(pending) != 1 {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	// At its expiry the code is no longer live, and the sender may get
	// another one; the old one is closed as expired.
	exp := pairT0.Add(time.Hour)
	if _, ok, _ := st.LivePairingCode(ctx, "telegram", "u1", exp); ok {
		t.Fatal("a code is live at its expiry")
	}
	if pending, _ := st.PendingPairingCodes(ctx, exp, 10); len(pending) != 0 {
		t.Fatalf("expired codes listed as pending: %+v", pending)
	}
	if ok, err := st.InsertPairingCode(ctx, pairingCode("CCCC4444", "u1", exp)); err != nil || !ok {
		t.Fatalf("a new code after expiry: %v %v", ok, err)
	}
	old, _ := st.GetPairingCode(ctx, "AAAA2222")
	if old.State != store.PairingExpired || !old.Closed.Equal(exp) {
		t.Fatalf("the expired code: %+v", old)
	}
	if n, err := st.CountPairingCodes(ctx, "telegram", "u1", pairT0); err != nil || n != 2 {
		t.Fatalf("codes given since the first: %d %v", n, err)
	}
	if n, _ := st.CountPairingCodes(ctx, "telegram", "u1", pairT0.Add(time.Minute)); n != 1 {
		t.Fatalf("codes given since a minute after the first: %d", n)
	}
	if n, _ := st.CountPairingCodes(ctx, "telegram", "u2", pairT0); n != 0 {
		t.Fatalf("another sender's count: %d", n)
	}
}

func testPairingConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	stores := []store.Store{st}
	if h.Peer != nil {
		p := h.Peer(t, st)
		t.Cleanup(func() { p.Close() })
		stores = append(stores, p)
	}
	var inserted atomic.Int32
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			s := stores[i%len(stores)]
			err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				ok, err := tx.InsertPairingCode(ctx, pairingCode(fmt.Sprintf("CODE%04d", i), "u9", pairT0))
				if ok {
					inserted.Add(1)
				}
				return err
			})
			if err != nil {
				t.Errorf("code %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if n := inserted.Load(); n != 1 {
		t.Fatalf("%d codes given to one sender at once, want 1", n)
	}
	if pending, _ := st.PendingPairingCodes(ctx, pairT0, 100); len(pending) != 1 {
		t.Fatalf("pending codes: %+v", pending)
	}
}

func testPairingClose(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	if _, err := st.InsertPairingCode(ctx, pairingCode("DDDD5555", "u1", pairT0)); err != nil {
		t.Fatal(err)
	}
	at := pairT0.Add(time.Minute)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			ok, err := st.ClosePairingCode(ctx, "DDDD5555", store.PairingApproved, at)
			if err != nil {
				t.Errorf("close: %v", err)
			}
			if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("a code approved %d times", wins.Load())
	}
	got, _ := st.GetPairingCode(ctx, "DDDD5555")
	if got.State != store.PairingApproved || !got.Closed.Equal(at) {
		t.Fatalf("approved code: %+v", got)
	}
	if _, ok, _ := st.LivePairingCode(ctx, "telegram", "u1", at); ok {
		t.Fatal("an approved code is still live")
	}
	if pending, _ := st.PendingPairingCodes(ctx, at, 10); len(pending) != 0 {
		t.Fatalf("an approved code listed as pending: %+v", pending)
	}
	if ok, err := st.ClosePairingCode(ctx, "NOPE0000", store.PairingApproved, at); err != nil || ok {
		t.Fatalf("closing an unknown code: %v %v", ok, err)
	}
	// With its code approved, the sender may be given another (after a
	// revocation, say).
	if ok, err := st.InsertPairingCode(ctx, pairingCode("EEEE6666", "u1", at)); err != nil || !ok {
		t.Fatalf("a code after an approved one: %v %v", ok, err)
	}
}

func testPairingRollback(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	boom := errors.New("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if ok, err := tx.InsertPairingCode(ctx, pairingCode("FFFF7777", "u1", pairT0)); err != nil || !ok {
			return fmt.Errorf("insert: %v %v", ok, err)
		}
		// The transaction sees its own code.
		if c, ok, err := tx.LivePairingCode(ctx, "telegram", "u1", pairT0); err != nil || !ok || c.Code != "FFFF7777" {
			return fmt.Errorf("live in the transaction: %+v %v %v", c, ok, err)
		}
		if _, _, err := tx.PutPerson(ctx, store.Person{Platform: "telegram", UserID: "u1", ApprovedBy: "cli", Approved: pairT0}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx: %v", err)
	}
	if _, err := st.GetPairingCode(ctx, "FFFF7777"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("a rolled-back code is stored: %v", err)
	}
	if _, ok, _ := st.GetPerson(ctx, "telegram", "u1"); ok {
		t.Fatal("a rolled-back person is in")
	}
}

func testPeopleKept(t *testing.T, h Harness) {
	ctx := context.Background()
	st := h.New(t)
	// Another replica, opened before the restart below.
	var peer store.Store
	if h.Peer != nil {
		peer = h.Peer(t, st)
		t.Cleanup(func() { peer.Close() })
	}
	alice := store.Person{Platform: "telegram", UserID: "111", UserName: "alice", Code: "AAAA2222", ApprovedBy: "cli", Approved: pairT0}
	got, created, err := st.PutPerson(ctx, alice)
	if err != nil || !created || got != alice {
		t.Fatalf("put: %+v %v %v", got, created, err)
	}
	// Let in again: kept as first let in.
	again := alice
	again.ApprovedBy, again.Approved, again.Code = "api", pairT0.Add(time.Hour), ""
	if got, created, err := st.PutPerson(ctx, again); err != nil || created || got != alice {
		t.Fatalf("second put: %+v %v %v", got, created, err)
	}
	bob := store.Person{Platform: "slack", UserID: "U2", ApprovedBy: "web", Approved: pairT0.Add(time.Minute)}
	if _, _, err := st.PutPerson(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.GetPerson(ctx, "discord", "111"); ok {
		t.Fatal("people are per platform")
	}
	list, err := st.ListPeople(ctx, 10)
	if err != nil || len(list) != 2 || list[0] != bob || list[1] != alice {
		t.Fatalf("list, newest first: %+v %v", list, err)
	}
	if one, _ := st.ListPeople(ctx, 1); len(one) != 1 {
		t.Fatalf("limit: %+v", one)
	}
	// Kept across a restart.
	st = h.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	if got, ok, err := st.GetPerson(ctx, "telegram", "111"); err != nil || !ok || got != alice {
		t.Fatalf("after a restart: %+v %v %v", got, ok, err)
	}
	// Revoked on one replica: gone on every one.
	revoker := st
	if peer != nil {
		revoker = peer
	}
	if ok, err := revoker.DeletePerson(ctx, "telegram", "111"); err != nil || !ok {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if ok, err := revoker.DeletePerson(ctx, "telegram", "111"); err != nil || ok {
		t.Fatalf("revoke twice: %v %v", ok, err)
	}
	if _, ok, err := st.GetPerson(ctx, "telegram", "111"); err != nil || ok {
		t.Fatalf("revoked person still in: %v %v", ok, err)
	}
	if list, _ := st.ListPeople(ctx, 10); len(list) != 1 || list[0] != bob {
		t.Fatalf("after revoking: %+v", list)
	}
}

func testPairingPrune(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for i, at := range []time.Time{pairT0, pairT0.Add(time.Hour), pairT0.Add(48 * time.Hour)} {
		if _, err := st.InsertPairingCode(ctx, pairingCode(fmt.Sprintf("PRUNE%03d", i), fmt.Sprint("u", i), at)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PrunePairingCodes(ctx, pairT0.Add(24*time.Hour), 1); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want 1 (the limit)", n, err)
	}
	if n, err := st.PrunePairingCodes(ctx, pairT0.Add(24*time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want the other old one", n, err)
	}
	if _, err := st.GetPairingCode(ctx, "PRUNE002"); err != nil {
		t.Fatalf("the recent code was pruned: %v", err)
	}
	if _, err := st.GetPairingCode(ctx, "PRUNE000"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("the old code is kept: %v", err)
	}
}

// A reply the gateway makes without an event of the log (a pairing code)
// is keyed by a negative seq: it goes out before the session's event rows.
func testOutboxNegativeSeq(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	for _, seq := range []int64{1, -7} {
		if ok, err := st.EnqueueOutbox(ctx, outboxRow("s1", seq, pairT0)); err != nil || !ok {
			t.Fatalf("enqueue %d: %v %v", seq, ok, err)
		}
	}
	if ok, err := st.EnqueueOutbox(ctx, outboxRow("s1", -7, pairT0)); err != nil || ok {
		t.Fatalf("a second row for (s1, -7): %v %v", ok, err)
	}
	due, err := st.OutboxDue(ctx, "telegram", pairT0, 10)
	if err != nil || len(due) != 1 || due[0].Seq != -7 {
		t.Fatalf("due: %+v %v", due, err)
	}
}

// A person's time zone: none until set, replaced by the next, read on
// another replica at once (a turn there reads it), kept across a restart,
// cleared once, and kept apart from the people let in.
func testPersonZones(t *testing.T, h Harness) {
	ctx := context.Background()
	st := h.New(t)
	var peer store.Store
	if h.Peer != nil {
		peer = h.Peer(t, st)
		t.Cleanup(func() { peer.Close() })
	}
	reader := st
	if peer != nil {
		reader = peer
	}
	if _, ok, err := st.GetPersonZone(ctx, "telegram:u_alice"); err != nil || ok {
		t.Fatalf("a zone before any was set: %v %v", ok, err)
	}
	alice := store.PersonZone{UserKey: "telegram:u_alice", Platform: "telegram", UserID: "111", UserName: "alice", Zone: "Europe/Berlin",
		SetBy: "alice (telegram)", Set: pairT0}
	if err := st.PutPersonZone(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := reader.GetPersonZone(ctx, alice.UserKey); err != nil || !ok || got != alice {
		t.Fatalf("the zone, on another replica: %+v %v %v", got, ok, err)
	}
	// Set again: the new zone replaces the old one, with who set it.
	moved := alice
	moved.Zone, moved.SetBy, moved.Set, moved.UserName = "Pacific/Kiritimati", "admin (web)", pairT0.Add(time.Hour), "alice k"
	if err := st.PutPersonZone(ctx, moved); err != nil {
		t.Fatal(err)
	}
	bob := store.PersonZone{UserKey: "slack:u_bob", Platform: "slack", UserID: "U2", Zone: "Pacific/Pago_Pago", SetBy: "bob (slack)", Set: pairT0.Add(time.Minute)}
	if err := st.PutPersonZone(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := reader.GetPersonZone(ctx, alice.UserKey); err != nil || !ok || got != moved {
		t.Fatalf("the zone set again: %+v %v %v", got, ok, err)
	}
	list, err := st.ListPersonZones(ctx, 10)
	if err != nil || len(list) != 2 || list[0] != moved || list[1] != bob {
		t.Fatalf("zones, most recently set first: %+v %v", list, err)
	}
	if one, _ := st.ListPersonZones(ctx, 1); len(one) != 1 {
		t.Fatalf("limit: %+v", one)
	}
	// A zone is not a person let in.
	if _, ok, _ := st.GetPerson(ctx, "telegram", "111"); ok {
		t.Fatal("setting a zone let the person in")
	}
	st = h.Reopen(t, st)
	t.Cleanup(func() { st.Close() })
	if peer == nil {
		reader = st
	}
	if got, ok, err := st.GetPersonZone(ctx, alice.UserKey); err != nil || !ok || got != moved {
		t.Fatalf("after a restart: %+v %v %v", got, ok, err)
	}
	if ok, err := reader.DeletePersonZone(ctx, alice.UserKey); err != nil || !ok {
		t.Fatalf("clear: %v %v", ok, err)
	}
	if ok, err := st.DeletePersonZone(ctx, alice.UserKey); err != nil || ok {
		t.Fatalf("clear twice: %v %v", ok, err)
	}
	if _, ok, err := st.GetPersonZone(ctx, alice.UserKey); err != nil || ok {
		t.Fatalf("a cleared zone: %v %v", ok, err)
	}
	if _, ok, _ := st.GetPersonZone(ctx, bob.UserKey); !ok {
		t.Fatal("clearing one zone cleared another")
	}
	// In a transaction, with the rest of it.
	errRollback := errors.New("roll back")
	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutPersonZone(ctx, alice); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	if _, ok, _ := st.GetPersonZone(ctx, alice.UserKey); ok {
		t.Fatal("a zone set in a rolled back transaction was kept")
	}
}
