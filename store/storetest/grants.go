package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Conformance of grants ("approve for this chat"): a grant covers its
// session, tool and exact bound until it expires or is revoked; a
// revocation is taken once; grants survive a restart and are seen by
// another replica; an insert rolls back with its transaction.

func testGrants(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CoversSessionToolBound", testGrantCovers},
		{"RevokedOnce", testGrantRevoke},
		{"KeptAcrossRestart", testGrantKept},
		{"RollsBackWithTx", testGrantRollback},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

var grantT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func grantRow(id, session, bound string, created time.Time) store.Grant {
	return store.Grant{ID: id, SessionID: session, GateID: "g_" + id, Tool: "email_send", Bound: bound, Label: "the same recipients: " + bound,
		GrantedBy: "alice", Surface: "telegram", Created: created, ExpiresAt: created.Add(time.Hour)}
}

func testGrantCovers(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	g := grantRow("gr1", "s1", "sara@example.com", grantT0)
	got, created, err := st.InsertGrant(ctx, g)
	if err != nil || !created || got.ID != "gr1" || got.GateID != "g_gr1" || got.Label != g.Label || got.GrantedBy != "alice" ||
		got.Surface != "telegram" || !got.Created.Equal(grantT0) || !got.ExpiresAt.Equal(grantT0.Add(time.Hour)) || !got.RevokedAt.IsZero() {
		t.Fatalf("insert: %+v %v %v", got, created, err)
	}
	// The same id again keeps the first.
	again := g
	again.Bound = "evil@example.com"
	if got, created, err := st.InsertGrant(ctx, again); err != nil || created || got.Bound != "sara@example.com" {
		t.Fatalf("second insert: %+v %v %v", got, created, err)
	}
	for _, tc := range []struct {
		session, tool, bound string
		at                   time.Time
		want                 bool
	}{
		{"s1", "email_send", "sara@example.com", grantT0, true},
		{"s1", "email_send", "sara@example.com", grantT0.Add(59 * time.Minute), true},
		{"s1", "email_send", "sara@example.com", grantT0.Add(time.Hour), false}, // expired at its expiry
		{"s1", "email_send", "bo@example.com", grantT0, false},
		{"s1", "email_send", "sara@example.com,bo@example.com", grantT0, false},
		{"s1", "shell_exec", "sara@example.com", grantT0, false},
		{"s2", "email_send", "sara@example.com", grantT0, false},
	} {
		got, ok, err := st.ActiveGrant(ctx, tc.session, tc.tool, tc.bound, tc.at)
		if err != nil || ok != tc.want || (ok && got.ID != "gr1") {
			t.Errorf("ActiveGrant(%s, %s, %s, %s) = %+v %v %v, want %v", tc.session, tc.tool, tc.bound, tc.at, got, ok, err, tc.want)
		}
	}
	if _, _, err := st.InsertGrant(ctx, grantRow("gr2", "s2", "bo@example.com", grantT0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	all, err := st.ListGrants(ctx, "", false, time.Time{}, 10)
	if err != nil || len(all) != 2 || all[0].ID != "gr2" || all[1].ID != "gr1" {
		t.Fatalf("list all (newest first): %+v %v", all, err)
	}
	one, err := st.ListGrants(ctx, "s1", false, time.Time{}, 10)
	if err != nil || len(one) != 1 || one[0].ID != "gr1" {
		t.Fatalf("list of s1: %+v %v", one, err)
	}
	active, err := st.ListGrants(ctx, "", true, grantT0.Add(time.Hour+30*time.Second), 10)
	if err != nil || len(active) != 1 || active[0].ID != "gr2" {
		t.Fatalf("active after gr1 expired: %+v %v", active, err)
	}
	if lim, err := st.ListGrants(ctx, "", false, time.Time{}, 1); err != nil || len(lim) != 1 {
		t.Fatalf("limit: %+v %v", lim, err)
	}
	if _, err := st.GetGrant(ctx, "nope"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("unknown grant: %v", err)
	}
}

func testGrantRevoke(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	if _, _, err := st.InsertGrant(ctx, grantRow("gr1", "s1", "sara@example.com", grantT0)); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range n {
		wg.Go(func() {
			g, won, err := st.RevokeGrant(ctx, "gr1", fmt.Sprintf("u%d", i), grantT0.Add(time.Minute))
			if err != nil || g.RevokedAt.IsZero() {
				t.Errorf("revoke: %+v %v", g, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if won {
				wins++
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d revocations won, want 1", wins)
	}
	g, err := st.GetGrant(ctx, "gr1")
	if err != nil || g.RevokedBy == "" || !g.RevokedAt.Equal(grantT0.Add(time.Minute)) || g.Active(grantT0.Add(2*time.Minute)) {
		t.Fatalf("revoked grant %+v %v", g, err)
	}
	if _, ok, err := st.ActiveGrant(ctx, "s1", "email_send", "sara@example.com", grantT0.Add(2*time.Minute)); err != nil || ok {
		t.Fatalf("a revoked grant still covers: %v %v", ok, err)
	}
	if active, err := st.ListGrants(ctx, "s1", true, grantT0.Add(2*time.Minute), 10); err != nil || len(active) != 0 {
		t.Fatalf("a revoked grant is listed active: %+v %v", active, err)
	}
	if _, _, err := st.RevokeGrant(ctx, "nope", "u", grantT0); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
}

func testGrantKept(t *testing.T, h Harness) {
	ctx := context.Background()
	st := h.New(t)
	if _, _, err := st.InsertGrant(ctx, grantRow("gr1", "s1", "sara@example.com", grantT0)); err != nil {
		st.Close()
		t.Fatal(err)
	}
	if h.Peer != nil {
		peer := h.Peer(t, st)
		if _, ok, err := peer.ActiveGrant(ctx, "s1", "email_send", "sara@example.com", grantT0); err != nil || !ok {
			t.Errorf("the other replica does not see the grant: %v %v", ok, err)
		}
		if _, won, err := peer.RevokeGrant(ctx, "gr1", "bob", grantT0.Add(time.Minute)); err != nil || !won {
			t.Errorf("revoke on the other replica: %v %v", won, err)
		}
		peer.Close()
	}
	if h.Reopen == nil {
		st.Close()
		return
	}
	st = h.Reopen(t, st)
	defer st.Close()
	g, err := st.GetGrant(ctx, "gr1")
	if err != nil || g.Bound != "sara@example.com" || !g.ExpiresAt.Equal(grantT0.Add(time.Hour)) || (h.Peer != nil) != !g.RevokedAt.IsZero() {
		t.Fatalf("after a restart: %+v %v", g, err)
	}
}

func testGrantRollback(t *testing.T, h Harness) {
	ctx := context.Background()
	st := memStore(t, h)
	boom := fmt.Errorf("boom")
	err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, _, err := tx.InsertGrant(ctx, grantRow("gr1", "s1", "sara@example.com", grantT0)); err != nil {
			return err
		}
		if _, ok, err := tx.ActiveGrant(ctx, "s1", "email_send", "sara@example.com", grantT0); err != nil || !ok {
			return fmt.Errorf("the grant is not seen in its own transaction: %v %v", ok, err)
		}
		return boom
	})
	if err != boom {
		t.Fatalf("tx: %v", err)
	}
	if _, err := st.GetGrant(ctx, "gr1"); !gh.IsCode(err, gh.CodeNotFound) {
		t.Fatalf("a rolled-back grant is stored: %v", err)
	}
}
