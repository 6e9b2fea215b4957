package turnbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkApprovalTurn runs b.N approval turns (message → the model asks
// email_send → card → approve → one SMTP send → answer) over HTTP with
// each session's SSE stream attached, in sessions of turnsPerSession turns
// one after another, C sessions at a time, and reports what a turn costs
// (see the package doc). Run with -benchtime=300x (60 sessions).
func BenchmarkApprovalTurn(b *testing.B) {
	for _, backend := range []string{"postgres", "sqlite"} {
		b.Run(backend, func(b *testing.B) {
			for _, c := range []int{1, 8} {
				b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) { benchApproval(b, backend, c) })
			}
		})
	}
}

// pgCounters are the server's cluster-wide counters.
type pgCounters struct {
	xid     int64 // the next transaction id: write transactions so far
	walSync int64 // pg_stat_wal.wal_sync, -1 when the server has no pg_stat_wal
}

func benchApproval(b *testing.B, backend string, c int) {
	s := newStack(b, backend)
	ctx := context.Background()
	n := b.N

	// One session warms caches and prepared statements; its memory jobs
	// run now, so the measured pass runs the measured turns' only.
	warm, err := s.runConversations(ctx, "warm", turnsPerSession, turnsPerSession, 1)
	if err != nil {
		b.Fatal(err)
	}
	s.quiesce()
	if _, err := s.runMemoryJobs(ctx); err != nil {
		b.Fatal(err)
	}
	pg := s.pg != nil
	version := 0
	var idleReads float64
	if pg {
		if err := s.stats.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
			b.Fatal(err)
		}
		// What the idle stack reads on its own (sweeper, claims that find
		// nothing), to set beside the per-turn reads.
		t0 := s.tracer.snapshot()
		time.Sleep(time.Second)
		d := s.tracer.snapshot().sub(t0)
		idleReads = float64(d.n[stmtRead] + d.n[stmtRecall])
	}

	// The turns.
	var pg0 pgCounters
	var tr0 tally
	if pg {
		pg0 = s.pgCounters(b, version)
		tr0 = s.tracer.snapshot()
	}
	commits0 := s.store.Commits()
	b.ResetTimer()
	start := time.Now()
	outs, err := s.runConversations(ctx, "bench", n, turnsPerSession, c)
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.checkMails(append(warm, outs...)); err != nil {
		b.Fatal(err)
	}
	s.quiesce()
	commits := s.store.Commits() - commits0
	var pg1 pgCounters
	var turns tally
	if pg {
		turns = s.tracer.snapshot().sub(tr0)
		pg1 = s.pgCounters(b, version)
	}

	// The memory model pass over the measured turns, as memory.Worker
	// runs it after them.
	calls0, mcommits0 := s.memoryCalls(), s.store.Commits()
	var pgm0 pgCounters
	var trm0 tally
	if pg {
		pgm0, trm0 = s.pgCounters(b, version), s.tracer.snapshot()
	}
	jobs, err := s.runMemoryJobs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	memCalls, memCommits := s.memoryCalls()-calls0, s.store.Commits()-mcommits0
	var pgm1 pgCounters
	var mem tally
	if pg {
		mem = s.tracer.snapshot().sub(trm0)
		pgm1 = s.pgCounters(b, version)
	}

	// The bare baseline: single-row INSERTs on the same database, same
	// concurrency.
	bareRate := s.bareInserts(b, n, c)

	per := func(v int64) float64 { return float64(v) / float64(n) }
	rate := float64(n) / elapsed.Seconds()
	b.ReportMetric(rate, "turns/s")
	lat := make([]float64, 0, len(outs))
	for _, o := range outs {
		lat = append(lat, float64(o.took.Microseconds())/1000)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-turn-ms")
	b.ReportMetric(lat[min(len(lat)-1, len(lat)*99/100)], "p99-turn-ms")
	b.ReportMetric(bareRate, "bare-inserts/s")
	b.ReportMetric(rate/bareRate, "turn-to-insert-ratio")
	b.ReportMetric(per(commits), "commits/turn")
	b.ReportMetric(per(int64(memCalls)), "memory-model-calls/turn")
	b.ReportMetric(per(memCommits), "memory-commits/turn")
	b.Logf("%s C=%d: %d turns (%d sessions of at most %d) in %v; memory pass (batch %d): %d batch attempts, %d model calls, %d commits",
		backend, c, n, (n+turnsPerSession-1)/turnsPerSession, turnsPerSession, elapsed.Round(time.Millisecond),
		s.env.Memory.Config().Batch, jobs, memCalls, memCommits)
	if !pg {
		return
	}
	b.ReportMetric(per(pg1.xid-pg0.xid), "write-tx/turn")
	b.ReportMetric(per(pgm1.xid-pgm0.xid), "memory-write-tx/turn")
	if pg0.walSync >= 0 {
		b.ReportMetric(per(pg1.walSync-pg0.walSync), "wal-syncs/turn")
		b.ReportMetric(per(pgm1.walSync-pgm0.walSync), "memory-wal-syncs/turn")
	}
	b.ReportMetric(per(turns.writeTx), "traced-write-tx/turn")
	b.ReportMetric(per(turns.n[stmtRead]), "read-stmts/turn")
	b.ReportMetric(per(turns.n[stmtRecall]), "recall-read-stmts/turn")
	b.ReportMetric(per(turns.n[stmtWrite]), "write-stmts/turn")
	b.ReportMetric(idleReads, "idle-read-stmts/s")
	b.Logf("per turn: %.2f reads (%.2f of them inside transactions; %.2f more for knowledge recall), %.2f writes, %.2f notifies; %.2f traced write transactions; idle stack: %.0f reads/s",
		per(turns.n[stmtRead]), per(turns.inTx[stmtRead]), per(turns.n[stmtRecall]), per(turns.n[stmtWrite]), per(turns.n[stmtNotify]), per(turns.writeTx), idleReads)
	b.Logf("memory pass per turn: %.2f reads (recall tables included), %.2f writes, %.2f traced write transactions",
		per(mem.n[stmtRead]+mem.n[stmtRecall]), per(mem.n[stmtWrite]), per(mem.writeTx))
	// The breakdown is longer than the ten lines go test keeps of a
	// benchmark's log: TestMain prints it after the benchmarks, the last
	// run of each sub-benchmark only.
	{
		var w strings.Builder
		fmt.Fprintf(&w, "%s (%d turns): statements per turn, normalised prefix\n", b.Name(), n)
		top := func(title, kind string, limit int) {
			fmt.Fprintf(&w, "  %s:\n", title)
			for _, kc := range turns.top(kind, limit) {
				fmt.Fprintf(&w, "    %6.2f  %s\n", float64(kc.n)/float64(n), kc.key)
			}
		}
		top("top read statements", stmtRead, 15)
		top("knowledge recall reads (counted apart)", stmtRecall, 8)
		top("top write statements", stmtWrite, 15)
		breakdowns.put(b.Name(), w.String())
	}
}

// breakdowns keeps each sub-benchmark's statement breakdown, for
// TestMain to print once the benchmark lines are out.
var breakdowns = &breakdownLog{text: map[string]string{}}

type breakdownLog struct {
	mu    sync.Mutex
	names []string
	text  map[string]string
}

func (bd *breakdownLog) put(name, text string) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	if _, ok := bd.text[name]; !ok {
		bd.names = append(bd.names, name)
	}
	bd.text[name] = text
}

func TestMain(m *testing.M) {
	code := m.Run()
	breakdowns.mu.Lock()
	for _, name := range breakdowns.names {
		os.Stdout.WriteString(breakdowns.text[name])
	}
	breakdowns.mu.Unlock()
	os.Exit(code)
}

// pgCounters reads the xid counter and the WAL syncs, after making the
// store's idle connections flush their pending statistics (PG 15+:
// backends report to pg_stat_wal at most once a second otherwise).
func (s *stack) pgCounters(b *testing.B, version int) pgCounters {
	ctx := context.Background()
	if version >= 150000 {
		for _, c := range s.pg.Pool().AcquireAllIdle(ctx) {
			if _, err := c.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
				b.Logf("flush statistics: %v", err)
			}
			c.Release()
		}
	}
	out := pgCounters{walSync: -1}
	// xmax of a snapshot is the first unassigned xid; reading it assigns
	// none.
	if err := s.stats.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&out.xid); err != nil {
		b.Fatal(err)
	}
	if version >= 140000 {
		if err := s.stats.QueryRow(ctx, `SELECT wal_sync FROM pg_stat_wal`).Scan(&out.walSync); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// bareInserts inserts n rows into an events-shaped table of the same
// database, c at a time (supervisor/bench_test.go's baseline), and
// returns the rate.
func (s *stack) bareInserts(b *testing.B, n, c int) float64 {
	ctx := context.Background()
	const table = `CREATE TABLE bench_bare (session_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, idem_key TEXT, created_at BIGINT NOT NULL, PRIMARY KEY (session_id, seq))`
	const insert = `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES ($1, $2, 'user.message', '{"text":"hi","delivery":"queue"}', NULL, 0)`
	var exec func(session string, seq int64) error
	if s.pg != nil {
		if _, err := s.pg.Pool().Exec(ctx, table); err != nil {
			b.Fatal(err)
		}
		exec = func(session string, seq int64) error {
			_, err := s.pg.Pool().Exec(ctx, insert, session, seq)
			return err
		}
	} else {
		if _, err := s.lite.WriteDB().ExecContext(ctx, table); err != nil {
			b.Fatal(err)
		}
		exec = func(session string, seq int64) error {
			_, err := s.lite.WriteDB().ExecContext(ctx, insert, session, seq)
			return err
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := range c {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if err := exec(fmt.Sprintf("bare-%d", w), i); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return float64(n) / elapsed.Seconds()
}
