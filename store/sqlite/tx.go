package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

type querier = sqlrow.Querier

// reader runs the reads. The Store embeds one on the read pool, so its
// methods are the Store's reads; a tx has one on its transaction.
type reader struct {
	q querier
}

// writer runs the writes that are a single statement, and the reads, on
// the writer connection. The Store embeds one outside a transaction, where
// SQLite runs each statement as its own transaction (autocommit), so its
// methods are the Store's writes; a tx has one on its transaction. The
// writes that take several statements are tx methods, which the Store runs
// with InTx.
type writer struct {
	reader
}

var (
	_ store.Reader = (*reader)(nil)
	_ store.Reader = (*writer)(nil)
)

// tx implements store.Tx over a transaction. SQLite has no row locks: the
// single writer connection holds the whole database for the transaction,
// which is a stronger lock.
type tx struct {
	writer
	wake bool
	// atCommit runs just before COMMIT (InsertReceiveAtCommit).
	atCommit []func(ctx context.Context) error
}

var _ store.Tx = (*tx)(nil)

func (t *tx) Wake() { t.wake = true }

type rowScanner = sqlrow.Scanner

const sessionCols = `id, tenant, title, last_seq, last_input_seq, read_watermark, compaction_seq, epoch, created_at, updated_at`

func scanSession(row interface{ Scan(...any) error }) (gh.Session, error) {
	var s gh.Session
	var created, updated int64
	err := row.Scan(&s.ID, &s.Tenant, &s.Title, &s.LastSeq, &s.LastInputSeq, &s.ReadWatermark, &s.CompactionSeq, &s.Epoch, &created, &updated)
	s.Created, s.Updated = fromMicros(created), fromMicros(updated)
	return s, err
}

func (t *reader) GetSession(ctx context.Context, id string) (gh.Session, error) {
	s, err := scanSession(t.q.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Session{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", id)
	}
	return s, dbErr(err, "get session")
}

func (t *reader) ListSessions(ctx context.Context, tenant string, limit int) ([]gh.Session, error) {
	return sqlrow.QueryAll(ctx, t.q, "list sessions", scanSession, `SELECT `+sessionCols+` FROM sessions WHERE tenant = ? ORDER BY updated_at DESC, id LIMIT ?`, tenant, limit)
}

func (t *tx) CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error) {
	res, err := t.q.ExecContext(ctx, `INSERT INTO sessions (id, tenant, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		s.ID, s.Tenant, s.Title, micros(s.Created), micros(s.Created))
	if err != nil {
		return gh.Session{}, false, dbErr(err, "create session")
	}
	n, _ := res.RowsAffected()
	got, err := t.GetSession(ctx, s.ID)
	return got, n == 1, err
}

const eventCols = `session_id, seq, kind, payload, COALESCE(idem_key, ''), created_at`

func scanEvent(row interface{ Scan(...any) error }) (gh.Event, error) {
	var e gh.Event
	var payload string
	var created int64
	err := row.Scan(&e.SessionID, &e.Seq, &e.Kind, &payload, &e.Key, &created)
	e.Payload = []byte(payload)
	e.CreatedAt = fromMicros(created)
	return e, err
}

func (t *reader) Events(ctx context.Context, sessionID string, after int64, limit int) ([]gh.Event, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT `+eventCols+` FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`, sessionID, after, limit)
	if err != nil {
		return nil, dbErr(err, "read events")
	}
	defer rows.Close()
	// Grown by what is read: a poll that finds nothing allocates nothing.
	var out []gh.Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, dbErr(err, "read events")
		}
		out = append(out, e)
	}
	return out, dbErr(rows.Err(), "read events")
}

func (t *reader) EventByKey(ctx context.Context, sessionID, key string) (gh.Event, bool, error) {
	e, err := scanEvent(t.q.QueryRowContext(ctx, `SELECT `+eventCols+` FROM events WHERE session_id = ? AND idem_key = ?`, sessionID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Event{}, false, nil
	}
	if err != nil {
		return gh.Event{}, false, dbErr(err, "read event by key")
	}
	return e, true, nil
}

func (t *tx) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	var key any
	if p.Key != "" {
		key = p.Key
	}
	if p.UnlessGatePending {
		pending, err := t.gatePending(ctx, p.SessionID)
		if err != nil {
			return store.AppendResult{}, err
		}
		if pending {
			if p.Key != "" {
				if e, ok, err := t.EventByKey(ctx, p.SessionID, p.Key); err != nil || ok {
					return store.AppendResult{Event: e, Existing: ok}, err
				}
			}
			return store.AppendResult{GatePending: true}, nil
		}
	}
	// The insert takes its seq from the session row and skips a taken key
	// in one statement; the single writer connection makes it race-free.
	var seq int64
	var err error
	if f := p.Fence; f != nil {
		// Conditional on the lease (store.AppendParams.Fence), in the
		// same statement.
		err = t.q.QueryRowContext(ctx, `INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at)
			SELECT id, last_seq + 1, ?, ?, ?, ? FROM sessions WHERE id = ? AND (?6 = '' OR tenant = ?6) AND epoch = ?8
				AND EXISTS (SELECT 1 FROM runs WHERE runs.id = ?7 AND runs.session_id = sessions.id AND runs.epoch = ?8 AND runs.owner = ?9
					AND runs.state = 'running' AND runs.lease_expires_at > ?4)
			ON CONFLICT DO NOTHING RETURNING seq`,
			string(p.Kind), string(p.Payload), key, micros(p.Now), p.SessionID, p.Tenant, f.RunID, f.Epoch, f.Owner).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return store.AppendResult{Fenced: true}, nil
		}
	} else {
		err = t.q.QueryRowContext(ctx, `INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at)
			SELECT id, last_seq + 1, ?, ?, ?, ? FROM sessions WHERE id = ? AND (?6 = '' OR tenant = ?6)
			ON CONFLICT DO NOTHING RETURNING seq`,
			string(p.Kind), string(p.Payload), key, micros(p.Now), p.SessionID, p.Tenant).Scan(&seq)
	}
	if errors.Is(err, sql.ErrNoRows) {
		if p.Key != "" {
			if e, ok, err := t.EventByKey(ctx, p.SessionID, p.Key); err != nil || ok {
				return store.AppendResult{Event: e, Existing: ok}, err
			}
		}
		return store.AppendResult{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", p.SessionID)
	}
	if err != nil {
		return store.AppendResult{}, dbErr(err, "insert event")
	}
	if _, err := t.q.ExecContext(ctx, `UPDATE sessions SET
			last_seq = ?1,
			last_input_seq = CASE WHEN ?2 THEN ?1 ELSE last_input_seq END,
			compaction_seq = CASE WHEN ?3 THEN ?1 ELSE compaction_seq END,
			updated_at = ?4
		WHERE id = ?5`,
		seq, p.Input, p.Kind == gh.KindCompaction, micros(p.Now), p.SessionID); err != nil {
		return store.AppendResult{}, dbErr(err, "advance seq")
	}
	res := store.AppendResult{Event: gh.Event{SessionID: p.SessionID, Seq: seq, Kind: p.Kind, Payload: p.Payload, Key: p.Key, CreatedAt: fromMicros(micros(p.Now))}}
	if !p.QueueRun {
		return res, nil
	}
	run, ok, err := t.LockActiveRun(ctx, p.SessionID)
	if err != nil {
		return store.AppendResult{}, err
	}
	if !ok {
		// A run awaiting approval is left waiting: the input gets a
		// turn of its own (store.AppendParams.QueueRun).
		run, err = t.InsertRun(ctx, gh.Run{SessionID: p.SessionID, State: gh.RunQueued, MaxAttempts: p.MaxAttempts, AvailableAt: p.Now, Created: p.Now, Updated: p.Now})
		if err != nil {
			return store.AppendResult{}, err
		}
		res.Woke = true
	}
	res.RunID = run.ID
	if res.Woke {
		t.Wake()
	}
	if p.CheckGates {
		if res.GatePending, err = t.gatePending(ctx, p.SessionID); err != nil {
			return store.AppendResult{}, err
		}
	}
	return res, nil
}

// gatePending says whether the session has a gate still pending that a
// run waits for (an incident's card is about a run, not in it).
func (t *tx) gatePending(ctx context.Context, sessionID string) (bool, error) {
	var pending bool
	err := t.q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM gates WHERE session_id = ? AND state = 'pending' AND kind NOT IN ('incident', 'library'))`, sessionID).Scan(&pending)
	return pending, dbErr(err, "check pending gates")
}

const runCols = `id, session_id, state, attempts, max_attempts, owner, epoch, lease_expires_at, read_watermark, cancel_requested, reason, available_at, created_at, updated_at, execution, step, step_started_at, resume_requested`

func scanRun(row interface{ Scan(...any) error }) (gh.Run, error) {
	var r gh.Run
	var expires, avail, created, updated, step int64
	var execution string
	err := row.Scan(&r.ID, &r.SessionID, &r.State, &r.Attempts, &r.MaxAttempts, &r.Owner, &r.Epoch, &expires, &r.ReadWatermark, &r.CancelRequested, &r.Reason, &avail, &created, &updated, &execution, &r.Step, &step, &r.ResumeRequested)
	r.LeaseExpiresAt, r.AvailableAt, r.Created, r.Updated = fromMicros(expires), fromMicros(avail), fromMicros(created), fromMicros(updated)
	r.StepStarted = fromMicros(step)
	r.Execution = store.DecodeExecution(execution)
	return r, err
}

func (t *reader) GetRun(ctx context.Context, id int64) (gh.Run, error) {
	r, err := scanRun(t.q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Run{}, gh.Errorf(gh.CodeNotFound, "no run %d", id)
	}
	return r, dbErr(err, "get run")
}

func (t *tx) LockRun(ctx context.Context, id int64) (gh.Run, error) { return t.GetRun(ctx, id) }

func (t *reader) LatestRun(ctx context.Context, sessionID string) (gh.Run, bool, error) {
	r, err := scanRun(t.q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Run{}, false, nil
	}
	return r, err == nil, dbErr(err, "latest run")
}

func (t *tx) LockActiveRun(ctx context.Context, sessionID string) (gh.Run, bool, error) {
	r, err := scanRun(t.q.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE session_id = ? AND state IN ('queued', 'running')`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Run{}, false, nil
	}
	return r, err == nil, dbErr(err, "active run")
}

func (t *tx) LockWaitingRuns(ctx context.Context, sessionID string, resumeOnly bool) ([]gh.Run, error) {
	return sqlrow.QueryAll(ctx, t.q, "waiting runs", scanRun, `SELECT `+runCols+` FROM runs WHERE session_id = ? AND state = 'awaiting_approval' AND (NOT ? OR resume_requested) ORDER BY id`, sessionID, resumeOnly)
}

func (t *tx) ClaimCandidate(ctx context.Context, now time.Time) (gh.Run, bool, bool, error) {
	for _, q := range []string{
		`SELECT ` + runCols + ` FROM runs WHERE state = 'running' AND lease_expires_at <= ? ORDER BY lease_expires_at, id LIMIT 1`,
		`SELECT ` + runCols + ` FROM runs WHERE state = 'queued' AND available_at <= ? ORDER BY available_at, id LIMIT 1`,
	} {
		r, err := scanRun(t.q.QueryRowContext(ctx, q, micros(now)))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return gh.Run{}, false, false, dbErr(err, "claim candidate")
		}
		var more bool
		err = t.q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id <> ?2 AND
			((state = 'queued' AND available_at <= ?1) OR (state = 'running' AND lease_expires_at <= ?1)))`, micros(now), r.ID).Scan(&more)
		return r, true, more, dbErr(err, "claim candidate: more")
	}
	return gh.Run{}, false, false, nil
}

func (t *tx) LockSession(ctx context.Context, id string) (gh.Session, error) {
	return t.GetSession(ctx, id)
}

// sessionRunSQL reads a session and a run in one statement; the single
// writer connection is the lock.
var sessionRunSQL = `SELECT ` + qualify("s.", sessionCols) + `, ` + qualify("r.", runCols) + ` FROM sessions s JOIN runs r ON r.id = ? WHERE s.id = ?`

func (t *tx) LockSessionRun(ctx context.Context, sessionID string, runID int64) (gh.Session, gh.Run, error) {
	var s gh.Session
	var r gh.Run
	var sc, su, expires, avail, rc, ru, step int64
	var execution string
	err := t.q.QueryRowContext(ctx, sessionRunSQL, runID, sessionID).Scan(
		&s.ID, &s.Tenant, &s.Title, &s.LastSeq, &s.LastInputSeq, &s.ReadWatermark, &s.CompactionSeq, &s.Epoch, &sc, &su,
		&r.ID, &r.SessionID, &r.State, &r.Attempts, &r.MaxAttempts, &r.Owner, &r.Epoch, &expires, &r.ReadWatermark, &r.CancelRequested, &r.Reason, &avail, &rc, &ru, &execution, &r.Step, &step, &r.ResumeRequested)
	r.StepStarted = fromMicros(step)
	if errors.Is(err, sql.ErrNoRows) {
		// One of them is missing: the statements of their own say which.
		sess, err := t.LockSession(ctx, sessionID)
		if err != nil {
			return gh.Session{}, gh.Run{}, err
		}
		run, err := t.LockRun(ctx, runID)
		return sess, run, err
	}
	if err != nil {
		return gh.Session{}, gh.Run{}, dbErr(err, "lock session and run")
	}
	s.Created, s.Updated = fromMicros(sc), fromMicros(su)
	r.LeaseExpiresAt, r.AvailableAt, r.Created, r.Updated = fromMicros(expires), fromMicros(avail), fromMicros(rc), fromMicros(ru)
	r.Execution = store.DecodeExecution(execution)
	return s, r, nil
}

// qualify prefixes each of a column list's columns.
func qualify(prefix, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}

func (t *tx) UpdateRun(ctx context.Context, r gh.Run) error {
	_, err := t.q.ExecContext(ctx, `UPDATE runs SET state = ?, attempts = ?, owner = ?, epoch = ?, lease_expires_at = ?, read_watermark = ?,
			cancel_requested = ?, reason = ?, available_at = ?, updated_at = ?, execution = ?, step = ?, step_started_at = ?, resume_requested = ? WHERE id = ?`,
		string(r.State), r.Attempts, r.Owner, r.Epoch, micros(r.LeaseExpiresAt), r.ReadWatermark, r.CancelRequested, r.Reason,
		micros(r.AvailableAt), micros(r.Updated), store.EncodeExecution(r.Execution), r.Step, micros(r.StepStarted), r.ResumeRequested, r.ID)
	return dbErr(err, "update run")
}

// UpdateRunAtCommit implements store.Tx: run just before COMMIT.
func (t *tx) UpdateRunAtCommit(_ context.Context, r gh.Run) error {
	t.atCommit = append(t.atCommit, func(ctx context.Context) error { return t.UpdateRun(ctx, r) })
	return nil
}

func (t *tx) InsertRun(ctx context.Context, r gh.Run) (gh.Run, error) {
	err := t.q.QueryRowContext(ctx, `INSERT INTO runs (session_id, state, attempts, max_attempts, owner, epoch, lease_expires_at, read_watermark,
			cancel_requested, reason, available_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.SessionID, string(r.State), r.Attempts, r.MaxAttempts, r.Owner, r.Epoch, micros(r.LeaseExpiresAt), r.ReadWatermark,
		r.CancelRequested, r.Reason, micros(r.AvailableAt), micros(r.Created), micros(r.Updated)).Scan(&r.ID)
	return r, dbErr(err, "insert run")
}

func (t *tx) BumpEpoch(ctx context.Context, sessionID string, now time.Time) (gh.Session, error) {
	s, err := scanSession(t.q.QueryRowContext(ctx, `UPDATE sessions SET epoch = epoch + 1, updated_at = ? WHERE id = ? RETURNING `+sessionCols, micros(now), sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Session{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", sessionID)
	}
	return s, dbErr(err, "bump epoch")
}

func (t *tx) SetReadWatermark(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	_, err := t.q.ExecContext(ctx, `UPDATE sessions SET read_watermark = MAX(read_watermark, ?), updated_at = ? WHERE id = ?`, seq, micros(now), sessionID)
	return dbErr(err, "record read watermark")
}

func (t *writer) AddLedger(ctx context.Context, r gh.LedgerRow) error {
	_, err := t.q.ExecContext(ctx, `INSERT INTO ledger (session_id, run_id, user_key, provider, model, attempt, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.SessionID, r.RunID, r.UserKey, r.Provider, r.Model, r.Attempt, r.InputTokens, r.OutputTokens, r.CostUSD, r.DurationMs, r.Error, micros(r.Created))
	return dbErr(err, "add ledger row")
}

func (t *reader) Ledger(ctx context.Context, sessionID string, limit int) ([]gh.LedgerRow, error) {
	rows, err := t.q.QueryContext(ctx, `SELECT id, session_id, run_id, user_key, provider, model, attempt, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at
		FROM ledger WHERE session_id = ? ORDER BY id LIMIT ?`, sessionID, limit)
	if err != nil {
		return nil, dbErr(err, "read ledger")
	}
	defer rows.Close()
	var out []gh.LedgerRow
	for rows.Next() {
		var r gh.LedgerRow
		var created int64
		if err := rows.Scan(&r.ID, &r.SessionID, &r.RunID, &r.UserKey, &r.Provider, &r.Model, &r.Attempt, &r.InputTokens, &r.OutputTokens, &r.CostUSD, &r.DurationMs, &r.Error, &created); err != nil {
			return nil, dbErr(err, "read ledger")
		}
		r.Created = fromMicros(created)
		out = append(out, r)
	}
	return out, dbErr(rows.Err(), "read ledger")
}

func (t *reader) HasClaimable(ctx context.Context, now time.Time) (bool, error) {
	var one int
	err := t.q.QueryRowContext(ctx, `SELECT 1 WHERE EXISTS (SELECT 1 FROM runs WHERE state = 'running' AND lease_expires_at <= ?1)
		OR EXISTS (SELECT 1 FROM runs WHERE state = 'queued' AND available_at <= ?1)`, micros(now)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, dbErr(err, "check claimable")
}

func (t *reader) Usage(ctx context.Context, by string, since time.Time, userKey string) ([]gh.UsageRow, error) {
	key := "user_key"
	if by == "model" {
		key = "provider || ':' || model"
	}
	rows, err := t.q.QueryContext(ctx, `SELECT `+key+` AS k, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0)
		FROM ledger WHERE created_at >= ? AND (? = '' OR user_key = ?) GROUP BY k ORDER BY k`, micros(since), userKey, userKey)
	if err != nil {
		return nil, dbErr(err, "sum ledger")
	}
	defer rows.Close()
	var out []gh.UsageRow
	for rows.Next() {
		var u gh.UsageRow
		if err := rows.Scan(&u.Key, &u.Calls, &u.InputTokens, &u.OutputTokens, &u.CostUSD); err != nil {
			return nil, dbErr(err, "sum ledger")
		}
		out = append(out, u)
	}
	return out, dbErr(rows.Err(), "sum ledger")
}

// RunCost implements store.Reader (index ledger_run).
func (t *reader) RunCost(ctx context.Context, runID int64) (gh.Usage, float64, error) {
	var u gh.Usage
	var cost float64
	err := t.q.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0) FROM ledger WHERE run_id = ?`, runID).
		Scan(&u.InputTokens, &u.OutputTokens, &cost)
	return u, cost, dbErr(err, "read run cost")
}

// AppendAll implements store.Tx: one append after another, in process.
func (t *tx) AppendAll(ctx context.Context, ps []store.AppendParams) ([]store.AppendResult, error) {
	out := make([]store.AppendResult, 0, len(ps))
	for _, p := range ps {
		res, err := t.Append(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// ClaimStart implements store.Store with the Tx's steps in one
// transaction: in process, a statement costs no round trip.
func (s *Store) ClaimStart(ctx context.Context, p store.ClaimStartParams) (store.ClaimStarted, error) {
	return store.ClaimStartSteps(ctx, s, p)
}
