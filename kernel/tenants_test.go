package kernel

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// sessionReads counts the store's session reads.
type sessionReads struct {
	store.Store
	n atomic.Int64
}

func (r *sessionReads) GetSession(ctx context.Context, id string) (gh.Session, error) {
	r.n.Add(1)
	return r.Store.GetSession(ctx, id)
}

// A tenant check of a session seen lately reads nothing; the memory of
// tenants stays within its bound however many sessions pass through, and
// another tenant's session is unknown to this one.
func TestSessionTenantsAreRememberedWithinABound(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "g.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reads := &sessionReads{Store: st}
	k := New(reads, Config{SessionCache: 3})
	for i := range 5 {
		if _, _, err := k.CreateSession(ctx, gh.Session{ID: fmt.Sprintf("s%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := k.CreateSession(ctx, gh.Session{ID: "acme1", Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	if n := k.tenants.len(); n != 3 {
		t.Fatalf("%d tenants held, want the bound 3", n)
	}
	before := reads.n.Load()
	if ok, err := k.KnownSession(ctx, "acme1", gh.DefaultTenant); err != nil || ok {
		t.Fatalf("another tenant's session must be unknown: %v %v", ok, err)
	}
	if ok, err := k.KnownSession(ctx, "s4", ""); err != nil || !ok {
		t.Fatalf("a recent session: %v %v", ok, err)
	}
	if n := reads.n.Load() - before; n != 0 {
		t.Fatalf("%d reads for sessions held in memory", n)
	}
	// Pushed out of the bound: read once, then held again.
	if ok, err := k.KnownSession(ctx, "s0", ""); err != nil || !ok {
		t.Fatalf("an older session: %v %v", ok, err)
	}
	if ok, _ := k.KnownSession(ctx, "s0", ""); !ok || reads.n.Load()-before != 1 {
		t.Fatalf("an evicted session costs one read, then none: %d reads", reads.n.Load()-before)
	}
	if ok, err := k.KnownSession(ctx, "nope", ""); err != nil || ok {
		t.Fatalf("an unknown session: %v %v", ok, err)
	}
	if n := k.tenants.len(); n != 3 {
		t.Fatalf("%d tenants held after the reads, want 3", n)
	}
}
