package scalebench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The bulk fill writes, with plain SQL, the rows the kernel and the
// supervisor leave behind after simple answered turns (see checkShape,
// which compares them with a real turn's in the same run): per turn a
// user.message, run.started, assistant.message and run.finished event, a
// run settled done and a ledger row. Sessions alternate two and three
// turns, so a session holds 10 events on average: 100,000 sessions are
// 1,000,000 events. Going through the kernel instead would take an hour
// on Postgres; the fill takes about a minute.

// fill describes one bulk load: sessions prefix0000000 … in a database
// whose runs table has no id at or above firstRun.
type fill struct {
	prefix   string
	sessions int
	firstRun int64
	base     time.Time
}

func newFill(prefix string, sessions int) fill {
	// A month ago: the sessions are old, their runs long settled.
	return fill{prefix: prefix, sessions: sessions, firstRun: 1, base: time.Now().Add(-30 * 24 * time.Hour).UTC().Truncate(time.Microsecond)}
}

func (f fill) id(i int) string { return fmt.Sprintf("%s%07d", f.prefix, i) }

// turnsOf is how many answered turns session i holds: 2 or 3, 2.5 on
// average.
func turnsOf(i int) int { return 2 + i%2 }

// firstRunOf is the id of session i's first run: runs are numbered in
// session order from firstRun.
func (f fill) firstRunOf(i int) int64 { return f.firstRun + int64(i/2*5+i%2*2) }

// runs is how many runs (and ledger rows) the fill writes.
func (f fill) runs() int64 { return f.firstRunOf(f.sessions) - f.firstRun }

type eventRow struct {
	seq     int64
	kind    gh.Kind
	payload string
	key     string // "" is no idempotency key (NULL)
	at      time.Time
}

type runRow struct {
	id            int64
	epoch         int64
	readWatermark int64
	created, done time.Time
}

type sessionRows struct {
	id                      string
	created, updated        time.Time
	lastSeq, lastInput, rwm int64
	epoch                   int64
	events                  []eventRow
	runs                    []runRow
}

const execution = `{"provider":"instant","model":"zero","selection":"instant:zero","tools":0}`

// turnEvents are the four events of turn k (0-based) of a session, run
// runID, starting at seq b+1 with b = 4k, as the supervisor commits them;
// turn k's claim is the session's epoch k+1.
func turnEvents(k int, runID int64, at time.Time) []eventRow {
	b := int64(4 * k)
	gen := fmt.Sprintf("u%d-a1", b+1)
	ms := time.Millisecond
	return []eventRow{
		{b + 1, gh.KindUserMessage, fmt.Sprintf(`{"text":"question %d","delivery":"queue","selection":"instant:zero"}`, k), "", at},
		{b + 2, gh.KindRunStarted, fmt.Sprintf(`{"runId":%d,"attempt":1}`, runID), kernel.RunStartedKey(int64(k + 1)), at.Add(ms)},
		{b + 3, gh.KindAssistantMessage, fmt.Sprintf(`{"generationId":%q,"text":"ok","inputSeqs":[%d],"stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":1},"provider":"instant","model":"zero"}`, gen, b+1), gen, at.Add(2 * ms)},
		{b + 4, gh.KindRunFinished, fmt.Sprintf(`{"runId":%d,"attempt":1,"status":"done","turns":1,"tokens":{"inputTokens":10,"outputTokens":1},"turnTokens":{"inputTokens":10,"outputTokens":1},"context":{"messages":%d,"tokens":150},"stopReason":"end_turn","provider":"instant","model":"zero","durationMs":2}`, runID, 2*k+4),
			fmt.Sprintf("run%d-epoch%d-finished", runID, k+1), at.Add(3 * ms)},
	}
}

// session returns the rows of session i.
func (f fill) session(i int) sessionRows {
	turns := turnsOf(i)
	created := f.base.Add(time.Duration(i) * 10 * time.Millisecond)
	s := sessionRows{id: f.id(i), created: created, epoch: int64(turns)}
	run := f.firstRunOf(i)
	for k := range turns {
		at := created.Add(time.Duration(k) * time.Second)
		evs := turnEvents(k, run, at)
		s.events = append(s.events, evs...)
		s.runs = append(s.runs, runRow{id: run, epoch: int64(k + 1), readWatermark: evs[1].seq, created: at, done: evs[3].at})
		run++
	}
	last := s.events[len(s.events)-1]
	s.lastSeq, s.lastInput, s.rwm, s.updated = last.seq, last.seq-3, last.seq-2, last.at
	return s
}

// fillSQLite writes f in one transaction of prepared inserts on the
// writer connection.
func fillSQLite(ctx context.Context, st *sqlite.Store, f fill) error {
	tx, err := st.WriteDB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = tx.PrepareContext(ctx, q)
		return s
	}
	sess := prep(`INSERT INTO sessions (id, tenant, title, last_seq, last_input_seq, read_watermark, compaction_seq, epoch, created_at, updated_at) VALUES (?, 'default', '', ?, ?, ?, 0, ?, ?, ?)`)
	ev := prep(`INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
	run := prep(`INSERT INTO runs (id, session_id, state, attempts, max_attempts, owner, epoch, lease_expires_at, read_watermark, cancel_requested, reason, available_at, created_at, updated_at, execution) VALUES (?, ?, 'done', 1, 3, 'scalebench-fill', ?, 0, ?, 0, '', ?, ?, ?, ?)`)
	led := prep(`INSERT INTO ledger (session_id, run_id, provider, model, attempt, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at, user_key) VALUES (?, ?, 'instant', 'zero', 1, 10, 1, 0, 0, '', ?, 'local')`)
	if err != nil {
		return err
	}
	us := func(t time.Time) int64 { return t.UnixMicro() }
	for i := range f.sessions {
		s := f.session(i)
		if _, err := sess.ExecContext(ctx, s.id, s.lastSeq, s.lastInput, s.rwm, s.epoch, us(s.created), us(s.updated)); err != nil {
			return err
		}
		for _, e := range s.events {
			var key any
			if e.key != "" {
				key = e.key
			}
			if _, err := ev.ExecContext(ctx, s.id, e.seq, string(e.kind), e.payload, key, us(e.at)); err != nil {
				return err
			}
		}
		for _, r := range s.runs {
			if _, err := run.ExecContext(ctx, r.id, s.id, r.epoch, r.readWatermark, us(r.created), us(r.created), us(r.done), execution); err != nil {
				return err
			}
			if _, err := led.ExecContext(ctx, s.id, r.id, us(r.created.Add(time.Millisecond))); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// Fold the fill into the database file, as SQLite's automatic
	// checkpoints would have over the months it stands for.
	_, err = st.WriteDB().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// fillPostgres writes f with COPY on the store's pool: sessions, runs
// and ledger on one connection, the events (the bulk) split over two
// more, all at once. Then it moves the runs' id sequence past the fill
// and runs VACUUM ANALYZE, which autovacuum would have done on a database
// that grew to this size over time.
func fillPostgres(ctx context.Context, st *postgres.Store, f fill) error {
	pool := st.Pool()
	copyRows := func(table string, cols []string, lo, hi int, rows func(s sessionRows, emit func(...any))) error {
		var buf [][]any
		i := lo
		src := pgx.CopyFromFunc(func() ([]any, error) {
			for len(buf) == 0 {
				if i >= hi {
					return nil, nil
				}
				rows(f.session(i), func(v ...any) { buf = append(buf, v) })
				i++
			}
			r := buf[0]
			buf = buf[1:]
			return r, nil
		})
		_, err := pool.CopyFrom(ctx, pgx.Identifier{table}, cols, src)
		if err != nil {
			return fmt.Errorf("copy %s: %w", table, err)
		}
		return nil
	}
	events := func(lo, hi int) func() error {
		return func() error {
			return copyRows("events", []string{"session_id", "seq", "kind", "payload", "idem_key", "created_at"}, lo, hi, func(s sessionRows, emit func(...any)) {
				for _, e := range s.events {
					var key any
					if e.key != "" {
						key = e.key
					}
					emit(s.id, e.seq, string(e.kind), e.payload, key, e.at)
				}
			})
		}
	}
	others := func() error {
		err := copyRows("sessions", []string{"id", "tenant", "title", "last_seq", "last_input_seq", "read_watermark", "compaction_seq", "epoch", "created_at", "updated_at"}, 0, f.sessions, func(s sessionRows, emit func(...any)) {
			emit(s.id, gh.DefaultTenant, "", s.lastSeq, s.lastInput, s.rwm, int64(0), s.epoch, s.created, s.updated)
		})
		if err != nil {
			return err
		}
		err = copyRows("runs", []string{"id", "session_id", "state", "attempts", "max_attempts", "owner", "epoch", "lease_expires_at", "read_watermark", "cancel_requested", "reason", "available_at", "created_at", "updated_at", "execution"}, 0, f.sessions, func(s sessionRows, emit func(...any)) {
			for _, r := range s.runs {
				emit(r.id, s.id, "done", int32(1), int32(3), "scalebench-fill", r.epoch, nil, r.readWatermark, false, "", r.created, r.created, r.done, execution)
			}
		})
		if err != nil {
			return err
		}
		return copyRows("ledger", []string{"session_id", "run_id", "provider", "model", "attempt", "input_tokens", "output_tokens", "cost_usd", "duration_ms", "error", "created_at", "user_key"}, 0, f.sessions, func(s sessionRows, emit func(...any)) {
			for _, r := range s.runs {
				emit(s.id, r.id, "instant", "zero", int32(1), int32(10), int32(1), float64(0), int64(0), "", r.created.Add(time.Millisecond), "local")
			}
		})
	}
	half := f.sessions / 2
	jobs := []func() error{others, events(0, half), events(half, f.sessions)}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for j, job := range jobs {
		wg.Go(func() { errs[j] = job() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if _, err := pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence('runs', 'id'), GREATEST((SELECT max(id) FROM runs), 1))`); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `VACUUM ANALYZE sessions, events, runs, ledger`)
	return err
}

// verifyFilled loads session i of f through the kernel and checks that
// it reads as the real answered session the fill meant: its events, its
// seqs and its last run settled done.
func verifyFilled(ctx context.Context, k *kernel.Kernel, f fill, i int) error {
	want := f.session(i)
	sess, err := k.Session(ctx, want.id)
	if err != nil {
		return err
	}
	if sess.LastSeq != want.lastSeq || sess.LastInputSeq != want.lastInput || sess.ReadWatermark != want.rwm || sess.Tenant != gh.DefaultTenant {
		return fmt.Errorf("session %s reads %+v", want.id, sess)
	}
	evs, err := k.Load(ctx, want.id)
	if err != nil {
		return err
	}
	if len(evs) != len(want.events) {
		return fmt.Errorf("session %s loads %d events, want %d", want.id, len(evs), len(want.events))
	}
	for j, e := range evs {
		w := want.events[j]
		if e.Seq != w.seq || e.Kind != w.kind || e.Key != w.key {
			return fmt.Errorf("session %s event %d is %d %s %q, want %d %s %q", want.id, j, e.Seq, e.Kind, e.Key, w.seq, w.kind, w.key)
		}
	}
	r, ok, err := k.LatestRun(ctx, want.id)
	if err != nil {
		return err
	}
	if !ok || r.State != gh.RunDone || r.ID != want.runs[len(want.runs)-1].id {
		return fmt.Errorf("session %s latest run %+v (found %v)", want.id, r, ok)
	}
	return nil
}

// checkShape compares a real simple turn's events (the first turn of
// session id, just run) with what the fill writes for a first turn: the
// same kinds, seqs, key forms and payload fields. When the supervisor
// changes what a turn commits, this fails, and the fill must follow.
func checkShape(ctx context.Context, k *kernel.Kernel, id string, runID int64) error {
	evs, err := k.Load(ctx, id)
	if err != nil {
		return err
	}
	want := turnEvents(0, runID, time.Time{})
	if len(evs) != len(want) {
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, string(e.Kind))
		}
		return fmt.Errorf("a real turn committed %d events (%s), the fill writes %d", len(evs), strings.Join(kinds, ", "), len(want))
	}
	for j, e := range evs {
		w := want[j]
		if e.Seq != w.seq || e.Kind != w.kind || e.Key != w.key {
			return fmt.Errorf("real event %d is %d %s %q, the fill writes %d %s %q", j, e.Seq, e.Kind, e.Key, w.seq, w.kind, w.key)
		}
		if got, fill := fieldsOf(e.Payload), fieldsOf([]byte(w.payload)); got != fill {
			return fmt.Errorf("real %s payload has fields %s, the fill writes %s", e.Kind, got, fill)
		}
	}
	return nil
}

// fieldsOf lists a JSON object's top-level field names, sorted.
func fieldsOf(raw []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "(not an object)"
	}
	names := slices.Sorted(maps.Keys(m))
	return strings.Join(names, ",")
}

// must fails the test or benchmark on err.
func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
