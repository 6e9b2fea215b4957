package redisgates_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/gates/redisgates"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

// benchStore is Postgres when GATEHOUSE_TEST_POSTGRES_URL is set, else
// SQLite.
func benchStore(b *testing.B) store.Store {
	var st store.Store
	if os.Getenv("GATEHOUSE_TEST_POSTGRES_URL") != "" {
		newStore, _ := postgresStores()
		st = newStore(b)
	} else {
		st = sqliteStore(b)
	}
	b.Cleanup(func() { st.Close() })
	b.Logf("store: %s", st.Dialect())
	return st
}

const (
	benchGates    = 1000
	benchPressers = 50
)

// BenchmarkClaims presses 1,000 gates 50 times each, with 50 pressers
// crowding each gate in turn:
//
//   - raw: EVALSHA of the claim script on fresh keys, seeded beforehand;
//   - ours: Service.Decide with the Redis registry, its hashes seeded by
//     Service.Opened as the tool worker does when it opens a gate, every
//     decision committed to the log before its presses return.
//
// throughput-ratio is ours ÷ raw, in presses per second. The two run
// interleaved, a tenth of the gates at a time, so that a change in the
// machine's load hits them alike.
// winners must be exactly 1,000 and double-decisions (gate.decided events
// beyond one per gate) 0; commits-per-decision counts database write
// transactions of ours per decision.
func BenchmarkClaims(b *testing.B) {
	c := client(b)
	st := benchStore(b)
	cs := &gatestest.CountingStore{Store: st}
	ctx := context.Background()
	var ours, raw, claimOnly time.Duration
	var presses, winners, doubles int
	var commits int64
	check := func(what string, r gatestest.PressResult, gs []gh.Gate) {
		if r.Winners != benchGates {
			b.Fatalf("%s: %d winners; want %d", what, r.Winners, benchGates)
		}
		if gs == nil {
			return
		}
		d := gatestest.CheckDecided(b, st, gs)
		doubles += d
		if d != 0 {
			b.Fatalf("%s: %d double decisions", what, d)
		}
	}
	for i := range b.N {
		b.StopTimer()
		p := fmt.Sprintf("%s%d:", prefix(b), i)
		gs := gatestest.BenchGates(b, st, time.Now(), fmt.Sprintf("b%d-", i), benchGates)
		ids := make([]string, len(gs))
		for j, g := range gs {
			ids[j] = g.ID
		}
		reg := redisgates.New(c, cs, redisgates.Config{Prefix: p})
		svc := gates.NewService(gates.Config{Registry: reg, Kernel: kernel.New(cs, kernel.Config{}), Store: cs})
		for _, g := range gs {
			if err := reg.Seed(ctx, g); err != nil { // as the service seeds a gate it opens
				b.Fatal(err)
			}
		}
		baseline := redisgates.New(c, st, redisgates.Config{Prefix: p + "raw:"})
		for _, g := range gs {
			if err := baseline.Seed(ctx, g); err != nil {
				b.Fatal(err)
			}
		}
		sha := reg.ScriptSHA()
		if got, err := c.ScriptLoad(ctx, reg.ScriptSource()).Result(); err != nil || got != sha {
			b.Fatalf("script load: %s %v", got, err)
		}

		var r, o gatestest.PressResult
		add := func(sum *gatestest.PressResult, x gatestest.PressResult, err error) {
			if err != nil {
				b.Fatal(err)
			}
			sum.Presses += x.Presses
			sum.Winners += x.Winners
			sum.Elapsed += x.Elapsed
		}
		rawPress := func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			res, err := c.EvalSha(ctx, sha, []string{baseline.Key(id)},
				string(d.State), d.By, d.Surface, d.Reason, d.Answer, gates.Clock(time.Now).UnixMicro()).Slice()
			return err == nil && res[0] == int64(1), err
		}
		ourPress := func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			_, won, err := svc.Decide(ctx, id, d)
			return won, err
		}
		// The claim alone, through our registry (the winner's SQL
		// compare-and-set included; the log commit is Decide's).
		gs2 := gatestest.BenchGates(b, st, time.Now(), fmt.Sprintf("c%d-", i), benchGates)
		claimReg := redisgates.New(c, st, redisgates.Config{Prefix: p + "claim:"})
		ids2 := make([]string, len(gs2))
		for j, g := range gs2 {
			ids2[j] = g.ID
			if err := claimReg.Seed(ctx, g); err != nil {
				b.Fatal(err)
			}
		}
		claimPress := func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			_, won, err := claimReg.Claim(ctx, id, d)
			return won, err
		}
		var co gatestest.PressResult
		cs.Reset()
		b.StartTimer()
		for lo := 0; lo < benchGates; lo += benchGates / 10 {
			hi := lo + benchGates/10
			x, err := gatestest.Press(ctx, ids[lo:hi], benchPressers, rawPress)
			add(&r, x, err)
			x, err = gatestest.Press(ctx, ids[lo:hi], benchPressers, ourPress)
			add(&o, x, err)
			x, err = gatestest.Press(ctx, ids2[lo:hi], benchPressers, claimPress)
			add(&co, x, err)
		}
		b.StopTimer()
		commits += cs.Commits()
		check("raw", r, nil)
		check("ours", o, gs)
		check("claim", co, nil)
		claimOnly += co.Elapsed
		ours += o.Elapsed
		raw += r.Elapsed
		presses += o.Presses
		winners += o.Winners
		dropPrefix(c, p)
	}
	n := float64(b.N)
	b.ReportMetric(float64(winners)/n, "winners")
	b.ReportMetric(float64(doubles)/n, "double-decisions")
	b.ReportMetric(float64(presses)/ours.Seconds(), "ours-presses/s")
	b.ReportMetric(float64(presses)/raw.Seconds(), "raw-presses/s")
	b.ReportMetric(raw.Seconds()/ours.Seconds(), "throughput-ratio")
	b.ReportMetric(raw.Seconds()/claimOnly.Seconds(), "claim-throughput-ratio")
	b.ReportMetric(float64(commits)/float64(winners), "commits-per-decision")
}
