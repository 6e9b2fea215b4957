package redisgates_test

import (
	"context"
	"sync/atomic"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/gates/redisgates"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// downStore is a replica's view of a database that stops answering: while
// down, every transaction, compare-and-set and gate read fails as a lost
// connection does.
type downStore struct {
	store.Store
	down atomic.Bool
}

func (s *downStore) err() error {
	return gh.Errorf(gh.CodeUnavailable, "database unreachable (test)")
}

func (s *downStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.down.Load() {
		return s.err()
	}
	return s.Store.InTx(ctx, fn)
}

func (s *downStore) DecideGate(ctx context.Context, d store.GateDecision) (gh.Gate, bool, error) {
	if s.down.Load() {
		return gh.Gate{}, false, s.err()
	}
	return s.Store.DecideGate(ctx, d)
}

func (s *downStore) GetGate(ctx context.Context, id string) (gh.Gate, error) {
	if s.down.Load() {
		return gh.Gate{}, s.err()
	}
	return s.Store.GetGate(ctx, id)
}

// replicaA is a second replica on the fixture's database and Redis whose
// database can be taken away: the one whose press wins in Redis and never
// reaches SQL.
func replicaA(t *testing.T, f *gatestest.Fixture) (*downStore, *redisgates.Registry, *gates.Service) {
	ds := &downStore{Store: f.Store}
	reg := redisgates.New(client(t), ds, redisgates.Config{Prefix: prefix(t), Now: f.Clock.Now})
	svc := f.NewService(kernel.New(ds, kernel.Config{Now: f.Clock.Now}), ds, reg)
	return ds, reg, svc
}

// pressTold is what a press may report to the person who made it: a
// decision only when it came back decided.
func pressTold(g gh.Gate) bool { return g.State != "" && g.State != gh.GatePending }

// The Redis hole, closed. Alice's press wins in Redis on replica A, whose
// database is gone before SQL hears of it (the process dies there, as far
// as SQL knows). Then Redis restarts empty, and Bob presses on replica B.
// Exactly one decision stands, Bob's, the one in SQL and in the log — and
// Alice was never told hers was made, so nothing anyone heard is lost.
func testRedisWinBeforeSQLThenRestart(t *testing.T, newStore func(t testing.TB) store.Store) {
	c := client(t)
	h := harness(t, newStore, nil)
	f := gatestest.NewFixture(t, h)
	g := f.OpenGate("g1", gatestest.GateSpec{})
	down, regA, svcA := replicaA(t, f)
	if err := regA.Seed(f.Ctx, g); err != nil { // A knows the gate: its press needs no SQL read
		t.Fatal(err)
	}
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	bob := gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"}

	down.down.Store(true)
	got, won, err := svcA.Decide(f.Ctx, g.ID, alice)
	if err == nil || won || pressTold(got) {
		t.Fatalf("alice's press with SQL gone: %+v won=%v err=%v; want an error and no decision to report", got, won, err)
	}
	if hs := c.HGetAll(f.Ctx, regA.Key(g.ID)).Val(); hs["state"] != "approved" || hs["by"] != "alice" {
		t.Fatalf("the interleaving did not happen: alice did not win in Redis: %v", hs)
	}
	if sg := f.Get(g.ID); sg.State != gh.GatePending {
		t.Fatalf("SQL heard of alice's press: %+v", sg)
	}
	// The bare registry answers the same: no decision without SQL.
	if got, won, err := regA.Claim(f.Ctx, g.ID, alice); err == nil || won || pressTold(got) {
		t.Fatalf("bare claim with SQL gone: %+v won=%v err=%v", got, won, err)
	}

	h.Forget(t, g.ID) // Redis restarted with nothing on disk
	down.down.Store(false)
	got, won, err = f.Service.Decide(f.Ctx, g.ID, bob)
	if err != nil || !won || got.State != gh.GateDenied || got.DecidedBy != "bob" || !got.Committed {
		t.Fatalf("bob's press after the restart: %+v won=%v %v", got, won, err)
	}
	// Alice presses again on A: she hears Bob's decision, the one SQL has.
	got, won, err = svcA.Decide(f.Ctx, g.ID, alice)
	if err != nil || won || got.DecidedBy != "bob" || got.State != gh.GateDenied {
		t.Fatalf("alice's retry: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, bob)
	f.RunQueuedOnce(g)
}

func TestRedisWinBeforeSQLThenRestartSQLite(t *testing.T) {
	testRedisWinBeforeSQLThenRestart(t, sqliteStore)
}

func TestRedisWinBeforeSQLThenRestartPostgres(t *testing.T) {
	testenv.PostgresURL(t) // skip early without Postgres
	newStore, _ := postgresStores()
	testRedisWinBeforeSQLThenRestart(t, newStore)
}

// The exact interleaving with a press that died: the claim script ran for
// Alice (Redis says approved) and her process died before any SQL write.
// Carol presses while SQL is unreachable from her replica: she hears
// nothing (before, she heard "already approved by alice", a decision SQL
// never got). Redis restarts; Bob's press is the decision, SQL's and the
// log's, and every later press hears it.
func TestRedisWinnerDiedThenRestart(t *testing.T) {
	c := client(t)
	h := harness(t, sqliteStore, nil)
	f := gatestest.NewFixture(t, h)
	g := f.OpenGate("g1", gatestest.GateSpec{})
	down, regA, svcA := replicaA(t, f)
	if err := regA.Seed(f.Ctx, g); err != nil {
		t.Fatal(err)
	}
	now := gates.Clock(f.Clock.Now)
	res, err := c.EvalSha(f.Ctx, regA.ScriptSHA(), []string{regA.Key(g.ID)}, "approved", "alice", "telegram", "", "", now.UnixMicro()).Slice()
	if err != nil || res[0] != int64(1) {
		t.Fatalf("alice's claim in Redis: %v %v", res, err)
	}
	down.down.Store(true)
	got, won, err := svcA.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "carol", Surface: "slack"})
	if err == nil || won || pressTold(got) {
		t.Fatalf("carol's press, alice's claim only in Redis, SQL gone: %+v won=%v err=%v; want no decision reported", got, won, err)
	}
	h.Forget(t, g.ID)
	down.down.Store(false)
	bob := gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"}
	got, won, err = f.Service.Decide(f.Ctx, g.ID, bob)
	if err != nil || !won || got.DecidedBy != "bob" {
		t.Fatalf("bob's press after the restart: %+v won=%v %v", got, won, err)
	}
	for _, svc := range []*gates.Service{f.Service, svcA} {
		got, won, err := svc.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"})
		if err != nil || won || got.DecidedBy != "bob" {
			t.Fatalf("a later press: %+v won=%v %v", got, won, err)
		}
	}
	f.OneDecision(g, bob)
}

// Without a Redis restart, the proposal a dead press left in Redis is
// carried into SQL by the next press, which hears it: SQL's compare-and-set
// takes it, and that is the decision.
func TestRedisProposalCarriedIntoSQL(t *testing.T) {
	h := harness(t, sqliteStore, nil)
	f := gatestest.NewFixture(t, h)
	g := f.OpenGate("g1", gatestest.GateSpec{})
	down, regA, svcA := replicaA(t, f)
	if err := regA.Seed(f.Ctx, g); err != nil {
		t.Fatal(err)
	}
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	down.down.Store(true)
	if got, won, err := svcA.Decide(f.Ctx, g.ID, alice); err == nil || won || pressTold(got) {
		t.Fatalf("alice's press with SQL gone: %+v won=%v err=%v", got, won, err)
	}
	down.down.Store(false)
	got, won, err := f.Service.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
	if err != nil || won || got.DecidedBy != "alice" || !got.Committed {
		t.Fatalf("bob's press: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, alice)
}
