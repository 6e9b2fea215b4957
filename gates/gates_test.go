package gates_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/gatestest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/store/storetest"
)

func sqliteStore(t testing.TB) store.Store {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "gatehouse.db")})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	return st
}

func postgresHarness(newRegistry func(t testing.TB, st store.Store, now func() time.Time) gates.Registry) gatestest.Harness {
	urls := map[store.Store]string{}
	open := func(t testing.TB, url string) store.Store {
		st := storetest.OpenPostgres(t, postgres.Config{URL: url})
		urls[st] = url
		return st
	}
	return gatestest.Harness{
		NewStore:    func(t testing.TB) store.Store { return open(t, testenv.PostgresURL(t)) },
		Peer:        func(t testing.TB, st store.Store) store.Store { return open(t, urls[st]) },
		NewRegistry: newRegistry,
	}
}

func sqlRegistry(t testing.TB, st store.Store, now func() time.Time) gates.Registry {
	return gates.NewSQL(st, now)
}

func TestSQLRegistrySQLite(t *testing.T) {
	gatestest.Run(t, gatestest.Harness{NewStore: sqliteStore, NewRegistry: sqlRegistry})
}

func TestSQLRegistryPostgres(t *testing.T) {
	gatestest.Run(t, postgresHarness(sqlRegistry))
}

// BenchmarkClaimsSQL is the workload of BenchmarkClaims in gates/redisgates
// (1,000 gates, 50 pressers crowding each gate in turn) through
// Service.Decide with the SQL registry, on Postgres when
// GATEHOUSE_TEST_POSTGRES_URL is set, else SQLite.
func BenchmarkClaimsSQL(b *testing.B) {
	var st store.Store
	if os.Getenv("GATEHOUSE_TEST_POSTGRES_URL") != "" {
		st = postgresHarness(sqlRegistry).NewStore(b)
	} else {
		st = sqliteStore(b)
	}
	b.Cleanup(func() { st.Close() })
	b.Logf("store: %s", st.Dialect())
	cs := &gatestest.CountingStore{Store: st}
	ctx := context.Background()
	var elapsed time.Duration
	var presses, winners int
	var commits int64
	for i := range b.N {
		b.StopTimer()
		gs := gatestest.BenchGates(b, st, time.Now(), fmt.Sprintf("b%d-", i), 1000)
		ids := make([]string, len(gs))
		for j, g := range gs {
			ids[j] = g.ID
		}
		svc := gates.NewService(gates.Config{Registry: gates.NewSQL(cs, nil), Kernel: kernel.New(cs, kernel.Config{}), Store: cs})
		cs.Reset()
		b.StartTimer()
		r, err := gatestest.Press(ctx, ids, 50, func(ctx context.Context, id string, d gh.Decision) (bool, error) {
			_, won, err := svc.Decide(ctx, id, d)
			return won, err
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		commits += cs.Commits()
		if r.Winners != len(gs) {
			b.Fatalf("%d winners; want %d", r.Winners, len(gs))
		}
		if d := gatestest.CheckDecided(b, st, gs); d != 0 {
			b.Fatalf("%d double decisions", d)
		}
		elapsed += r.Elapsed
		presses += r.Presses
		winners += r.Winners
	}
	b.ReportMetric(float64(winners)/float64(b.N), "winners")
	b.ReportMetric(0, "double-decisions")
	b.ReportMetric(float64(presses)/elapsed.Seconds(), "presses/s")
	b.ReportMetric(float64(commits)/float64(winners), "commits-per-decision")
}
