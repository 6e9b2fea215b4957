package redis_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	redisgates "github.com/gatehouse/gatehouse/gates/redis"
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
// crowding each gate in turn, through Service.Decide with the Redis
// registry (cold: every gate's hash is seeded from SQL by its first
// press), and through raw EVALSHA of the same claim script on fresh,
// seeded keys of the same Redis.
func BenchmarkClaims(b *testing.B) {
	c := client(b)
	st := benchStore(b)
	cs := &gatestest.CountingStore{Store: st}
	ctx := context.Background()
	var ours, raw time.Duration
	var presses, winners, rawWinners, doubles int
	var commits int64
	for i := range b.N {
		b.StopTimer()
		gs := gatestest.BenchGates(b, st, time.Now(), fmt.Sprintf("b%d-", i), benchGates)
		ids := make([]string, len(gs))
		for j, g := range gs {
			ids[j] = g.ID
		}
		p := fmt.Sprintf("%s%d:", prefix(b), i)
		reg := redisgates.New(c, cs, redisgates.Config{Prefix: p})
		svc := gates.NewService(gates.Config{Registry: reg, Kernel: kernel.New(cs, kernel.Config{})})
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

		b.StartTimer()
		r, err := gatestest.Press(ctx, ids, benchPressers, func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			res, err := c.EvalSha(ctx, sha, []string{baseline.Key(id)},
				string(d.State), d.By, d.Surface, d.Reason, d.Answer, gates.Clock(time.Now).UnixMicro()).Slice()
			return err == nil && res[0] == int64(1), err
		})
		if err != nil {
			b.Fatal(err)
		}
		cs.Reset()
		o, err := gatestest.Press(ctx, ids, benchPressers, func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			_, won, err := svc.Decide(ctx, id, d)
			return won, err
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		commits += cs.Commits()
		if o.Winners != benchGates || r.Winners != benchGates {
			b.Fatalf("winners: ours %d, raw %d; want %d", o.Winners, r.Winners, benchGates)
		}
		d := gatestest.CheckDecided(b, st, gs)
		doubles += d
		if d != 0 {
			b.Fatalf("%d double decisions", d)
		}
		ours += o.Elapsed
		raw += r.Elapsed
		presses += o.Presses
		winners += o.Winners
		rawWinners += r.Winners
		dropPrefix(c, p)
	}
	n := float64(b.N)
	b.ReportMetric(float64(winners)/n, "winners")
	b.ReportMetric(float64(doubles)/n, "double-decisions")
	b.ReportMetric(float64(presses)/ours.Seconds(), "ours-presses/s")
	b.ReportMetric(float64(presses)/raw.Seconds(), "raw-presses/s")
	b.ReportMetric(raw.Seconds()/ours.Seconds(), "throughput-ratio")
	b.ReportMetric(float64(commits)/float64(winners), "commits-per-decision")
}


