package redisgates_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/gates/redisgates"
	"github.com/gatehouse/gatehouse/internal/testing/redisha"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// failoverStores are the database as two replicas see it: Postgres (a
// store each) when GATEHOUSE_TEST_POSTGRES_URL is set, else one SQLite
// store the two share.
func failoverStores(t *testing.T) (store.Store, store.Store) {
	if os.Getenv("GATEHOUSE_TEST_POSTGRES_URL") == "" {
		st := sqliteStore(t)
		t.Cleanup(func() { st.Close() })
		return st, st
	}
	newStore, peer := postgresStores()
	a := newStore(t)
	b := peer(t, a)
	t.Cleanup(func() { b.Close(); a.Close() })
	return a, b
}

// sentinelReplica is one gateway replica's gate service, on its own
// go-redis failover client built from the URL as cmd/gatehouse builds it.
func sentinelReplica(t *testing.T, url, prefix string, st store.Store) (*gates.Service, *redisgates.Registry) {
	t.Helper()
	opts, err := goredis.ParseFailoverURL(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	rdb := goredis.NewFailoverClient(opts)
	t.Cleanup(func() { rdb.Close() })
	reg := redisgates.New(rdb, st, redisgates.Config{Prefix: prefix})
	return gates.NewService(gates.Config{Registry: reg, Kernel: kernel.New(st, kernel.Config{}), Store: st}), reg
}

// sentinelPress is one person's press and what it was told.
type sentinelPress struct {
	d        gh.Decision
	answer   gh.Gate
	won      bool
	failures int // unavailable answers before the one that worked
	ok       time.Time
}

// The Redis master dies in the middle of a crowd of presses, on two
// replicas, and the Sentinels promote its replica. Every gate gets two
// presses at once: Alice approves on Telegram through replica A, Bob
// denies on the web through replica B. Presses before the kill all work;
// during the gap they answer unavailable (a 503: retry), never a decision;
// once the new master is up they work again on the same clients, nothing
// restarted. SQL decides, so however the gap falls every gate has exactly
// one decision and every press that was answered heard that one.
func TestRedisSentinelFailover(t *testing.T) {
	ha := redisha.Start(t, redisha.Options{SentinelPassword: "sentinel-secret"})
	stA, stB := failoverStores(t)
	p := prefix(t)
	svcA, regA := sentinelReplica(t, ha.URL(), p, stA)
	svcB, _ := sentinelReplica(t, ha.URL(), p, stB)
	ctx := context.Background()
	// The Sentinels want their password: the URL's userinfo is what lets
	// the replicas in.
	anon := goredis.NewSentinelClient(&goredis.Options{Addr: ha.SentinelAddrs()[0], MaxRetries: -1})
	if _, err := anon.GetMasterAddrByName(ctx, "gatehouse").Result(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("a Sentinel asked without its password: %v; want NOAUTH", err)
	}
	anon.Close()

	const perPhase = 80
	all := gatestest.BenchGates(t, stA, time.Now(), "f-", 3*perPhase)
	phases := map[string][]gh.Gate{"before": all[:perPhase], "during": all[perPhase : 2*perPhase], "after": all[2*perPhase:]}
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Surface: "telegram"}
	bob := gh.Decision{State: gh.GateDenied, By: "bob", Surface: "web"}

	var mu sync.Mutex
	presses := map[string][]*sentinelPress{} // by gate
	// press presses g as d on svc until it is answered; an error must be
	// unavailable (one a retry can help), and it is retried.
	press := func(svc *gates.Service, g gh.Gate, d gh.Decision) {
		r := &sentinelPress{d: d}
		deadline := time.Now().Add(20 * time.Second)
		for {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			got, won, err := svc.Decide(pctx, g.ID, d)
			cancel()
			if err == nil {
				r.answer, r.won, r.ok = got, won, time.Now()
				break
			}
			if !gh.IsCode(err, gh.CodeUnavailable) {
				t.Errorf("%s's press of %s: %v; want unavailable (retry) or an answer", d.By, g.ID, err)
				return
			}
			r.failures++
			if time.Now().After(deadline) {
				t.Errorf("%s's press of %s still unavailable after 20s: %v", d.By, g.ID, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		presses[g.ID] = append(presses[g.ID], r)
		mu.Unlock()
	}
	// run presses every gate of gs from both replicas at once, eight
	// gates at a time.
	run := func(gs []gh.Gate) {
		work := make(chan gh.Gate)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for g := range work {
					var both sync.WaitGroup
					both.Go(func() { press(svcA, g, alice) })
					both.Go(func() { press(svcB, g, bob) })
					both.Wait()
				}
			})
		}
		for _, g := range gs {
			work <- g
		}
		close(work)
		wg.Wait()
	}
	failures := func(gs []gh.Gate) (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, g := range gs {
			for _, r := range presses[g.ID] {
				n += r.failures
			}
		}
		return n
	}

	run(phases["before"])
	if n := failures(phases["before"]); n != 0 {
		t.Fatalf("%d presses failed before the kill", n)
	}

	old := ha.KillMaster(t)
	killed := time.Now()
	pressing := make(chan struct{})
	go func() { defer close(pressing); run(phases["during"]) }()
	newMaster, took := ha.WaitNewMaster(t, old, 20*time.Second)
	<-pressing
	if t.Failed() {
		t.FailNow()
	}
	gap := failures(phases["during"])
	if gap == 0 {
		t.Fatal("no press failed after the kill: the failover did not fall in the middle of the presses")
	}
	firstOK := time.Time{}
	for _, g := range phases["during"] {
		for _, r := range presses[g.ID] {
			if firstOK.IsZero() || r.ok.Before(firstOK) {
				firstOK = r.ok
			}
		}
	}

	run(phases["after"])
	if n := failures(phases["after"]); n != 0 {
		t.Fatalf("%d presses failed after the new master was up (no restart should be needed)", n)
	}
	t.Logf("Redis failover: kill → new master %s in %s (every Sentinel names it, it answers ROLE master); kill → first answered press %s; %d presses answered unavailable in the gap",
		newMaster, took.Round(time.Millisecond), firstOK.Sub(killed).Round(time.Millisecond), gap)

	// The client went where the Sentinels said: the new master is not the
	// old one, and it holds the claims of the presses after the failover.
	if now, err := ha.MasterAddr(ctx); err != nil || now == old || now != newMaster {
		t.Fatalf("master after the failover: %q %v; want %s, not %s", now, err, newMaster, old)
	}
	direct := goredis.NewClient(&goredis.Options{Addr: newMaster})
	defer direct.Close()
	for _, g := range phases["after"] {
		if st, err := direct.HGet(ctx, regA.Key(g.ID), "state").Result(); err != nil || st == string(gh.GatePending) {
			t.Fatalf("gate %s on the new master %s: %q %v; want its decision", g.ID, newMaster, st, err)
		}
	}

	// A late press of a gate decided before the kill, through the new
	// master (whose copy of its hash may have missed the last writes: the
	// replication is asynchronous), hears the decision SQL has.
	carol := gh.Decision{State: gh.GateDenied, By: "carol", Surface: "slack"}
	for _, g := range phases["before"] {
		got, won, err := svcB.Decide(ctx, g.ID, carol)
		sg, gerr := stA.GetGate(ctx, g.ID)
		if err != nil || gerr != nil || won || !gates.SameDecision(got, sg) {
			t.Fatalf("carol's late press of %s: %+v won=%v %v; SQL has %+v %v", g.ID, got, won, err, sg, gerr)
		}
	}

	// SQL decided: one decision per gate, and every answer is it.
	counts, err := gatestest.DecidedCounts(ctx, stA, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all {
		sg, err := stA.GetGate(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sg.Committed || (!decidedAs(sg, alice) && !decidedAs(sg, bob)) {
			t.Fatalf("gate %s in SQL: %+v; want alice's or bob's decision, logged", g.ID, sg)
		}
		if counts[g.ID] != 1 {
			t.Fatalf("gate %s has %d gate.decided events; want 1", g.ID, counts[g.ID])
		}
		rs := presses[g.ID]
		if len(rs) != 2 {
			t.Fatalf("gate %s: %d presses answered; want 2", g.ID, len(rs))
		}
		winners := 0
		for _, r := range rs {
			if !gates.SameDecision(r.answer, sg) || !r.answer.Committed {
				t.Fatalf("gate %s: %s was told %s by %s/%s; SQL has %s by %s/%s", g.ID, r.d.By,
					r.answer.State, r.answer.DecidedBy, r.answer.Surface, sg.State, sg.DecidedBy, sg.Surface)
			}
			if r.won {
				winners++
				if r.d.By != sg.DecidedBy {
					t.Fatalf("gate %s: %s was told they won; SQL has %s's decision", g.ID, r.d.By, sg.DecidedBy)
				}
			}
		}
		if winners > 1 {
			t.Fatalf("gate %s: both presses were told they won", g.ID)
		}
	}
}

// decidedAs reports whether g holds d's decision.
func decidedAs(g gh.Gate, d gh.Decision) bool {
	return g.State == d.State && g.DecidedBy == d.By && g.Surface == d.Surface
}
