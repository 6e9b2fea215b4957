package redisgates_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/gates/redisgates"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

var nonce = func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

func client(t testing.TB) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatalf("parse GATEHOUSE_TEST_REDIS_URL: %v", err)
	}
	opts.PoolSize = 64
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	return c
}

// prefix is unique to the test and the run: the test's registries (its
// replicas) share it, other tests never see it.
func prefix(t testing.TB) string {
	return "gatehouse-test:" + nonce + ":" + strings.ReplaceAll(t.Name(), " ", "_") + ":"
}

func dropPrefix(c *goredis.Client, p string) {
	ctx := context.Background()
	iter := c.Scan(ctx, 0, p+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
}

func harness(t *testing.T, newStore func(t testing.TB) store.Store, peer func(t testing.TB, st store.Store) store.Store) gatestest.Harness {
	c := client(t)
	return gatestest.Harness{
		NewStore: newStore,
		Peer:     peer,
		NewRegistry: func(t testing.TB, st store.Store, now func() time.Time) gates.Registry {
			p := prefix(t)
			t.Cleanup(func() { dropPrefix(c, p) })
			return redisgates.New(c, st, redisgates.Config{Prefix: p, Now: now})
		},
		Forget: func(t testing.TB, id string) {
			if err := c.Del(context.Background(), prefix(t)+"gate:"+id).Err(); err != nil {
				t.Fatalf("forget: %v", err)
			}
		},
	}
}

func sqliteStore(t testing.TB) store.Store {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "gatehouse.db")})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	return st
}

func postgresStores() (func(t testing.TB) store.Store, func(t testing.TB, st store.Store) store.Store) {
	urls := map[store.Store]string{}
	open := func(t testing.TB, url string) store.Store {
		st := storetest.OpenPostgres(t, postgres.Config{URL: url})
		urls[st] = url
		return st
	}
	return func(t testing.TB) store.Store { return open(t, testenv.PostgresURL(t)) },
		func(t testing.TB, st store.Store) store.Store { return open(t, urls[st]) }
}

func TestRedisRegistrySQLite(t *testing.T) {
	gatestest.Run(t, harness(t, sqliteStore, nil))
}

func TestRedisRegistryPostgres(t *testing.T) {
	testenv.PostgresURL(t) // skip early without Postgres
	newStore, peer := postgresStores()
	gatestest.Run(t, harness(t, newStore, peer))
}

// With Redis unreachable nothing is decided anywhere.
func TestRedisUnreachable(t *testing.T) {
	h := gatestest.Harness{
		NewStore: sqliteStore,
		NewRegistry: func(t testing.TB, st store.Store, now func() time.Time) gates.Registry {
			c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: 1, DialTimeout: time.Second})
			t.Cleanup(func() { c.Close() })
			return redisgates.New(c, st, redisgates.Config{Now: now})
		},
	}
	f := gatestest.NewFixture(t, h)
	g := f.OpenGate("g1", gatestest.GateSpec{})
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "web"}
	if _, won, err := f.Registry.Claim(f.Ctx, g.ID, alice); won || !gh.IsCode(err, gh.CodeUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("claim: won=%v %v; want unavailable, with the cause", won, err)
	}
	if _, won, err := f.Service.Decide(f.Ctx, g.ID, alice); won || !gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("decide: won=%v %v; want unavailable", won, err)
	}
	f.Clock.Advance(time.Hour)
	if err := f.Service.SweepOnce(f.Ctx); !gh.IsCode(err, gh.CodeUnavailable) {
		t.Fatalf("sweep: %v; want unavailable", err)
	}
	if got := f.Get(g.ID); got.State != gh.GatePending {
		t.Fatalf("SQL gate after presses with Redis down: %+v", got)
	}
	if ds := f.Decided(g); len(ds) != 0 {
		t.Fatalf("logged with Redis down: %+v", ds)
	}
}

// A press that won in Redis and died before SQL heard of it: SQL still
// says pending. The next press gets the Redis decision and makes SQL and
// the log agree with it; so does the sweeper once the gate is due.
func TestWinnerDiedBeforeSQL(t *testing.T) {
	c := client(t)
	h := harness(t, sqliteStore, nil)
	f := gatestest.NewFixture(t, h)
	byPress := f.OpenGate("press", gatestest.GateSpec{})
	bySweep := f.OpenGate("sweep", gatestest.GateSpec{})
	reg := f.Registry.(*redisgates.Registry)
	now := gates.Clock(f.Clock.Now)
	for _, g := range []gh.Gate{byPress, bySweep} {
		if err := reg.Seed(f.Ctx, g); err != nil {
			t.Fatal(err)
		}
		res, err := c.EvalSha(f.Ctx, reg.ScriptSHA(), []string{reg.Key(g.ID)}, "approved", "alice", "telegram", "", "", now.UnixMicro()).Slice()
		if err != nil || res[0] != int64(1) {
			t.Fatalf("raw claim: %v %v", res, err)
		}
		if got := f.Get(g.ID); got.State != gh.GatePending {
			t.Fatalf("SQL heard of a raw claim: %+v", got)
		}
	}
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	got, won, err := f.Service.Decide(f.Ctx, byPress.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
	if err != nil || won || got.DecidedBy != "alice" || !got.Committed || !got.DecidedAt.Equal(now) {
		t.Fatalf("next press: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(byPress, alice)
	f.RunQueuedOnce(byPress)

	f.Clock.Advance(time.Hour)
	if err := f.Service.SweepOnce(f.Ctx); err != nil {
		t.Fatal(err)
	}
	// Decided at the press, before the expiry: approved, not expired.
	f.OneDecision(bySweep, alice)
}

func TestConfigDefaults(t *testing.T) {
	r := redisgates.New(goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}), nil, redisgates.Config{})
	if k := r.Key("g1"); k != "gatehouse:gate:g1" {
		t.Fatalf("key %q", k)
	}
	if r.ScriptSHA() == "" || !strings.Contains(r.ScriptSource(), "HSET") {
		t.Fatal("script")
	}
}

// A hash that says pending while SQL is decided (a seed that raced a
// restart): the press wins in Redis, SQL says otherwise, SQL is the
// answer and Redis learns it. No second decision reaches SQL or the log.
func TestStaleHashLosesToSQL(t *testing.T) {
	c := client(t)
	f := gatestest.NewFixture(t, harness(t, sqliteStore, nil))
	g := f.OpenGate("g1", gatestest.GateSpec{})
	reg := f.Registry.(*redisgates.Registry)
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	if _, won, err := f.Service.Decide(f.Ctx, g.ID, alice); err != nil || !won {
		t.Fatalf("first press: won=%v %v", won, err)
	}
	_, _, reg2 := f.Replica()
	for i, svc := range []*gates.Service{f.Service, f.NewService(f.Kernel, f.Store, reg2)} {
		if err := c.HSet(f.Ctx, reg.Key(g.ID), "state", "pending", "logged", "0").Err(); err != nil {
			t.Fatal(err)
		}
		got, won, err := svc.Decide(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"})
		if err != nil || won || got.DecidedBy != "alice" || got.State != gh.GateApproved {
			t.Fatalf("service %d, press on a stale hash: %+v won=%v %v", i, got, won, err)
		}
		if h := c.HGetAll(f.Ctx, reg.Key(g.ID)).Val(); h["by"] != "alice" || h["state"] != "approved" || h["logged"] != "1" {
			t.Fatalf("service %d: hash not corrected: %v", i, h)
		}
	}
	// The bare registry (no service) answers from SQL too.
	if err := c.HSet(f.Ctx, reg.Key(g.ID), "state", "pending").Err(); err != nil {
		t.Fatal(err)
	}
	got, won, err := reg.Claim(f.Ctx, g.ID, gh.Decision{State: gh.GateDenied, By: "carol", Surface: "web"})
	if err != nil || won || got.DecidedBy != "alice" {
		t.Fatalf("bare claim on a stale hash: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, alice)
}
