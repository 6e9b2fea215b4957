package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgrelay"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgtx"
)

type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// executor runs the reads and the writes that need no transaction of
// their own. The Store embeds one on the pool, where each statement is its
// own transaction, so its methods are the Store's; a tx embeds one on its
// connection. It holds no per-call state, so one serves every caller.
type executor struct {
	q       querier
	channel string
	events  string // the channel of commits relayed to other replicas
	// self is this store's NOTIFY payload: its own listener skips it.
	self string
}

// tx implements store.Tx over a pgx transaction: the executor's methods on
// its connection, and the locks and writes that need a transaction.
type tx struct {
	executor
	// conn is the transaction's connection.
	conn *pgtx.Tx
	// wake asks for a local wake-up after commit; notified says the
	// statement that queued the run already sent the NOTIFY.
	wake, notified bool
	// relayed is what the transaction appended, by session, for the
	// other replicas' streams (pgrelay).
	relayed relayed
}

// relayed collects a transaction's appended events by session, in order.
type relayed struct {
	order  []string
	events map[string][]gh.Event
}

func (r *relayed) add(e gh.Event) {
	if r.events == nil {
		r.events = map[string][]gh.Event{}
	}
	if _, ok := r.events[e.SessionID]; !ok {
		r.order = append(r.order, e.SessionID)
	}
	r.events[e.SessionID] = append(r.events[e.SessionID], e)
}

var _ store.Tx = (*tx)(nil)

func (t *tx) Wake() { t.wake = true }

const sessionCols = `id, tenant, title, last_seq, last_input_seq, read_watermark, compaction_seq, epoch, created_at, updated_at`

func scanSession(row pgx.Row) (gh.Session, error) {
	var s gh.Session
	err := row.Scan(&s.ID, &s.Tenant, &s.Title, &s.LastSeq, &s.LastInputSeq, &s.ReadWatermark, &s.CompactionSeq, &s.Epoch, &s.Created, &s.Updated)
	s.Created, s.Updated = s.Created.UTC(), s.Updated.UTC()
	return s, err
}

func (t *executor) getSession(ctx context.Context, id, suffix string) (gh.Session, error) {
	s, err := scanSession(t.q.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = $1`+suffix, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Session{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", id)
	}
	return s, dbErr(err, "get session")
}

func (t *executor) GetSession(ctx context.Context, id string) (gh.Session, error) {
	return t.getSession(ctx, id, "")
}

func (t *tx) LockSession(ctx context.Context, id string) (gh.Session, error) {
	return t.getSession(ctx, id, " FOR UPDATE")
}

func (t *executor) ListSessions(ctx context.Context, tenant string, limit int) ([]gh.Session, error) {
	rows, err := t.q.Query(ctx, `SELECT `+sessionCols+` FROM sessions WHERE tenant = $1 ORDER BY updated_at DESC, id LIMIT $2`, tenant, limit)
	if err != nil {
		return nil, dbErr(err, "list sessions")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.Session, error) { return scanSession(r) })
	return out, dbErr(err, "list sessions")
}

func (t *executor) CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error) {
	tag, err := t.q.Exec(ctx, `INSERT INTO sessions (id, tenant, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT (id) DO NOTHING`,
		s.ID, s.Tenant, s.Title, s.Created)
	if err != nil {
		return gh.Session{}, false, dbErr(err, "create session")
	}
	got, err := t.GetSession(ctx, s.ID)
	return got, tag.RowsAffected() == 1, err
}

const eventCols = `session_id, seq, kind, payload, COALESCE(idem_key, ''), created_at`

func scanEvent(row pgx.Row) (gh.Event, error) {
	var e gh.Event
	var payload []byte
	err := row.Scan(&e.SessionID, &e.Seq, &e.Kind, &payload, &e.Key, &e.CreatedAt)
	e.Payload, e.CreatedAt = payload, e.CreatedAt.UTC()
	return e, err
}

func (t *executor) Events(ctx context.Context, sessionID string, after int64, limit int) ([]gh.Event, error) {
	rows, err := t.q.Query(ctx, `SELECT `+eventCols+` FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, sessionID, after, limit)
	if err != nil {
		return nil, dbErr(err, "read events")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.Event, error) { return scanEvent(r) })
	return out, dbErr(err, "read events")
}

func (t *executor) EventByKey(ctx context.Context, sessionID, key string) (gh.Event, bool, error) {
	e, err := scanEvent(t.q.QueryRow(ctx, `SELECT `+eventCols+` FROM events WHERE session_id = $1 AND idem_key = $2`, sessionID, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Event{}, false, nil
	}
	if err != nil {
		return gh.Event{}, false, dbErr(err, "read event by key")
	}
	return e, true, nil
}

// appendSQL is the whole append in one statement: skip when the key is
// taken, assign the next seq under the session's row lock, insert the
// event. A racing twin with the same key fails on the unique index and the
// caller retries, finding the twin.
const appendSQL = `
WITH dup AS (
	SELECT 1 FROM events WHERE session_id = $1 AND idem_key = $5
), s AS (
	UPDATE sessions SET
		last_seq = last_seq + 1,
		last_input_seq = CASE WHEN $6 THEN last_seq + 1 ELSE last_input_seq END,
		compaction_seq = CASE WHEN $7 THEN last_seq + 1 ELSE compaction_seq END,
		updated_at = $8
	WHERE id = $1 AND ($2 = '' OR tenant = $2) AND NOT EXISTS (SELECT 1 FROM dup)
	RETURNING last_seq
), e AS (
	INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at)
	SELECT $1, last_seq, $3, $4::jsonb, $5, $8 FROM s
	RETURNING seq, payload
)`

// fencedAppendSQL is appendSQL conditional on a lease ($9 run, $10 epoch,
// $11 owner; store.AppendParams.Fence): the session row it updates is
// the lock every writer of the session takes first, so a claim that
// would supersede the lease waits for this statement or has already
// raised the session's epoch.
var fencedAppendSQL = strings.Replace(appendSQL, `AND NOT EXISTS (SELECT 1 FROM dup)`, `AND NOT EXISTS (SELECT 1 FROM dup)
		AND sessions.epoch = $10
		AND EXISTS (SELECT 1 FROM runs WHERE runs.id = $9 AND runs.session_id = $1 AND runs.epoch = $10 AND runs.owner = $11
			AND runs.state = 'running' AND runs.lease_expires_at > $8)`, 1)

// unlessGateSQL is appendSQL that appends nothing while the session has
// a gate pending (AppendParams.UnlessGatePending).
var unlessGateSQL = strings.Replace(appendSQL, `AND NOT EXISTS (SELECT 1 FROM dup)`, `AND NOT EXISTS (SELECT 1 FROM dup)
		AND NOT EXISTS (SELECT 1 FROM gates WHERE gates.session_id = $1 AND gates.state = 'pending' AND gates.kind NOT IN ('incident', 'library'))`, 1)

// queueSQL extends appendSQL: make sure the session has a run queued or
// running, and NOTIFY when a run became claimable. The no-op update of a
// queued or running run returns its id; a run awaiting approval is left
// waiting (store.AppendParams.QueueRun). With $11 it also says whether the
// session has a gate pending (AppendParams.CheckGates), in the same round
// trip.
var queueSQL = `, r AS (
	INSERT INTO runs (session_id, state, max_attempts, available_at, created_at, updated_at)
	SELECT $1, 'queued', $9, $8, $8, $8 FROM e
	ON CONFLICT (session_id) WHERE state IN ('queued', 'running') DO UPDATE SET state = runs.state
	RETURNING id, xmax = 0 AS woke
), n AS (
	SELECT pg_notify($10, $12) FROM r WHERE r.woke
), rn AS (
	` + pgrelay.NotifyOneSQL("$13", "$12::text", "$1::text", "e.seq", "$3::text", "e.payload", "$5::text", "$8::timestamptz", "e") + `
)
SELECT e.seq, e.payload, r.id, r.woke, (SELECT count(*) FROM n), (SELECT count(*) FROM rn),
	CASE WHEN $11 THEN EXISTS (SELECT 1 FROM gates WHERE session_id = $1 AND state = 'pending' AND kind NOT IN ('incident', 'library')) ELSE false END
FROM e, r`

func (t *tx) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	var key *string
	if p.Key != "" {
		key = &p.Key
	}
	res := store.AppendResult{Event: gh.Event{SessionID: p.SessionID, Kind: p.Kind, Key: p.Key, CreatedAt: p.Now.UTC()}}
	var err error
	if p.QueueRun {
		var notified, relayed int64
		sql := appendSQL
		if p.UnlessGatePending {
			sql = unlessGateSQL
		}
		err = t.q.QueryRow(ctx, sql+queueSQL,
			p.SessionID, p.Tenant, string(p.Kind), string(p.Payload), key, p.Input, p.Kind == gh.KindCompaction, p.Now, p.MaxAttempts, t.channel, p.CheckGates, t.self, t.events,
		).Scan(&res.Event.Seq, (*[]byte)(&res.Event.Payload), &res.RunID, &res.Woke, &notified, &relayed, &res.GatePending)
	} else if f := p.Fence; f != nil {
		err = t.q.QueryRow(ctx, fencedAppendSQL+` SELECT seq, payload FROM e`,
			p.SessionID, p.Tenant, string(p.Kind), string(p.Payload), key, p.Input, p.Kind == gh.KindCompaction, p.Now, f.RunID, f.Epoch, f.Owner,
		).Scan(&res.Event.Seq, (*[]byte)(&res.Event.Payload))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.AppendResult{Fenced: true}, nil
		}
	} else {
		err = t.q.QueryRow(ctx, appendSQL+` SELECT seq, payload FROM e`,
			p.SessionID, p.Tenant, string(p.Kind), string(p.Payload), key, p.Input, p.Kind == gh.KindCompaction, p.Now,
		).Scan(&res.Event.Seq, (*[]byte)(&res.Event.Payload))
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// Nothing appended: the key was taken, or a gate is pending, or
		// no such session.
		if p.Key != "" {
			if e, ok, err := t.EventByKey(ctx, p.SessionID, p.Key); err != nil || ok {
				return store.AppendResult{Event: e, Existing: ok}, err
			}
		}
		if p.UnlessGatePending {
			var pending bool
			if err := t.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM gates WHERE session_id = $1 AND state = 'pending' AND kind NOT IN ('incident', 'library'))`, p.SessionID).Scan(&pending); err != nil {
				return store.AppendResult{}, dbErr(err, "check pending gates")
			}
			if pending {
				return store.AppendResult{GatePending: true}, nil
			}
		}
		return store.AppendResult{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", p.SessionID)
	}
	if err != nil {
		return store.AppendResult{}, dbErr(err, "append event")
	}
	if res.Woke {
		t.wake, t.notified = true, true
	}
	if !p.QueueRun {
		// (A queued input's statement relays it itself.)
		t.relayed.add(res.Event)
	}
	return res, nil
}

const runCols = `id, session_id, state, attempts, max_attempts, owner, epoch, lease_expires_at, read_watermark, cancel_requested, reason, available_at, created_at, updated_at, execution, step, step_started_at, resume_requested`

// scanRun scans runCols, then extra columns into extra.
func scanRun(row pgx.Row, extra ...any) (gh.Run, error) {
	var r gh.Run
	var expires, step *time.Time
	var execution string
	err := row.Scan(append([]any{&r.ID, &r.SessionID, &r.State, &r.Attempts, &r.MaxAttempts, &r.Owner, &r.Epoch, &expires, &r.ReadWatermark,
		&r.CancelRequested, &r.Reason, &r.AvailableAt, &r.Created, &r.Updated, &execution, &r.Step, &step, &r.ResumeRequested}, extra...)...)
	if expires != nil {
		r.LeaseExpiresAt = expires.UTC()
	}
	if step != nil {
		r.StepStarted = step.UTC()
	}
	r.AvailableAt, r.Created, r.Updated = r.AvailableAt.UTC(), r.Created.UTC(), r.Updated.UTC()
	r.Execution = store.DecodeExecution(execution)
	return r, err
}

func (t *executor) getRun(ctx context.Context, id int64, suffix string) (gh.Run, error) {
	r, err := scanRun(t.q.QueryRow(ctx, `SELECT `+runCols+` FROM runs WHERE id = $1`+suffix, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Run{}, gh.Errorf(gh.CodeNotFound, "no run %d", id)
	}
	return r, dbErr(err, "get run")
}

func (t *executor) GetRun(ctx context.Context, id int64) (gh.Run, error) {
	return t.getRun(ctx, id, "")
}

func (t *tx) LockRun(ctx context.Context, id int64) (gh.Run, error) {
	return t.getRun(ctx, id, " FOR UPDATE")
}

// sessionRunSQL locks a session and a run in one statement; the locks are
// taken in the FROM list's order, session then run, as every writer does.
var sessionRunSQL = `SELECT ` + qualify("s.", sessionCols) + `, ` + qualify("r.", runCols) +
	` FROM sessions s JOIN runs r ON r.id = $2 WHERE s.id = $1 FOR UPDATE OF s, r`

func (t *tx) LockSessionRun(ctx context.Context, sessionID string, runID int64) (gh.Session, gh.Run, error) {
	var s gh.Session
	var r gh.Run
	var expires, step *time.Time
	var execution string
	err := t.q.QueryRow(ctx, sessionRunSQL, sessionID, runID).Scan(
		&s.ID, &s.Tenant, &s.Title, &s.LastSeq, &s.LastInputSeq, &s.ReadWatermark, &s.CompactionSeq, &s.Epoch, &s.Created, &s.Updated,
		&r.ID, &r.SessionID, &r.State, &r.Attempts, &r.MaxAttempts, &r.Owner, &r.Epoch, &expires, &r.ReadWatermark, &r.CancelRequested, &r.Reason, &r.AvailableAt, &r.Created, &r.Updated, &execution, &r.Step, &step, &r.ResumeRequested)
	if step != nil {
		r.StepStarted = step.UTC()
	}
	if errors.Is(err, pgx.ErrNoRows) {
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
	s.Created, s.Updated = s.Created.UTC(), s.Updated.UTC()
	if expires != nil {
		r.LeaseExpiresAt = expires.UTC()
	}
	r.AvailableAt, r.Created, r.Updated = r.AvailableAt.UTC(), r.Created.UTC(), r.Updated.UTC()
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

func (t *executor) optionalRun(ctx context.Context, what, sql string, args ...any) (gh.Run, bool, error) {
	r, err := scanRun(t.q.QueryRow(ctx, sql, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Run{}, false, nil
	}
	return r, err == nil, dbErr(err, what)
}

func (t *executor) LatestRun(ctx context.Context, sessionID string) (gh.Run, bool, error) {
	return t.optionalRun(ctx, "latest run", `SELECT `+runCols+` FROM runs WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, sessionID)
}

func (t *tx) LockActiveRun(ctx context.Context, sessionID string) (gh.Run, bool, error) {
	return t.optionalRun(ctx, "active run", `SELECT `+runCols+` FROM runs WHERE session_id = $1 AND state IN ('queued', 'running') FOR UPDATE`, sessionID)
}

func (t *tx) LockWaitingRuns(ctx context.Context, sessionID string, resumeOnly bool) ([]gh.Run, error) {
	rows, err := t.q.Query(ctx, `SELECT `+runCols+` FROM runs WHERE session_id = $1 AND state = 'awaiting_approval' AND (NOT $2 OR resume_requested) ORDER BY id FOR UPDATE`, sessionID, resumeOnly)
	if err != nil {
		return nil, dbErr(err, "waiting runs")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.Run, error) { return scanRun(r) })
	return out, dbErr(err, "waiting runs")
}

// ClaimCandidate locks the run and its session together, skipping either
// when another transaction holds it: taking the run first and waiting for
// the session would invert the session-then-run order of every other
// writer and deadlock with an edge commit arriving at the same moment.
//
// One statement: an expired lease first (a takeover), else the oldest
// queued run; COALESCE evaluates the second only when the first finds
// nothing.
func (t *tx) ClaimCandidate(ctx context.Context, now time.Time) (gh.Run, bool, bool, error) {
	var more bool
	r, err := scanRun(t.q.QueryRow(ctx, claimCandidateSQL, now), &more)
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Run{}, false, false, nil
	}
	if err != nil {
		return gh.Run{}, false, false, dbErr(err, "claim candidate")
	}
	return r, true, more, nil
}

// claimCandidateSQL also says whether another run looks claimable, in the
// same round trip.
var claimCandidateSQL = `SELECT ` + runCols + `, EXISTS (SELECT 1 FROM runs o WHERE o.id <> runs.id AND
		((o.state = 'queued' AND o.available_at <= $1) OR (o.state = 'running' AND o.lease_expires_at <= $1))) AS more
	FROM runs WHERE id = COALESCE(
	(SELECT r.id FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.state = 'running' AND r.lease_expires_at <= $1
		ORDER BY r.lease_expires_at, r.id LIMIT 1 FOR UPDATE OF r, s SKIP LOCKED),
	(SELECT r.id FROM runs r JOIN sessions s ON s.id = r.session_id WHERE r.state = 'queued' AND r.available_at <= $1
		ORDER BY r.available_at, r.id LIMIT 1 FOR UPDATE OF r, s SKIP LOCKED))`

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

const updateRunSQL = `UPDATE runs SET state = $1, attempts = $2, owner = $3, epoch = $4, lease_expires_at = $5, read_watermark = $6,
	cancel_requested = $7, reason = $8, available_at = $9, updated_at = $10, execution = $12, step = $13, step_started_at = $14, resume_requested = $15 WHERE id = $11`

func updateRunArgs(r gh.Run) []any {
	return []any{string(r.State), r.Attempts, r.Owner, r.Epoch, nullTime(r.LeaseExpiresAt), r.ReadWatermark, r.CancelRequested, r.Reason,
		r.AvailableAt, r.Updated, r.ID, store.EncodeExecution(r.Execution), r.Step, nullTime(r.StepStarted), r.ResumeRequested}
}

func (t *tx) UpdateRun(ctx context.Context, r gh.Run) error {
	_, err := t.q.Exec(ctx, updateRunSQL, updateRunArgs(r)...)
	return dbErr(err, "update run")
}

// UpdateRunAtCommit implements store.Tx: sent with COMMIT, no round trip
// of its own.
func (t *tx) UpdateRunAtCommit(_ context.Context, r gh.Run) error {
	t.conn.AtCommit(updateRunSQL, updateRunArgs(r)...)
	return nil
}

func (t *tx) InsertRun(ctx context.Context, r gh.Run) (gh.Run, error) {
	err := t.q.QueryRow(ctx, `INSERT INTO runs (session_id, state, attempts, max_attempts, owner, epoch, lease_expires_at, read_watermark,
			cancel_requested, reason, available_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
		r.SessionID, string(r.State), r.Attempts, r.MaxAttempts, r.Owner, r.Epoch, nullTime(r.LeaseExpiresAt), r.ReadWatermark,
		r.CancelRequested, r.Reason, r.AvailableAt, r.Created, r.Updated).Scan(&r.ID)
	return r, dbErr(err, "insert run")
}

func (t *tx) BumpEpoch(ctx context.Context, sessionID string, now time.Time) (gh.Session, error) {
	s, err := scanSession(t.q.QueryRow(ctx, `UPDATE sessions SET epoch = epoch + 1, updated_at = $1 WHERE id = $2 RETURNING `+sessionCols, now, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Session{}, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", sessionID)
	}
	return s, dbErr(err, "bump epoch")
}

func (t *tx) SetReadWatermark(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	_, err := t.q.Exec(ctx, `UPDATE sessions SET read_watermark = GREATEST(read_watermark, $1), updated_at = $2 WHERE id = $3`, seq, now, sessionID)
	return dbErr(err, "record read watermark")
}

func (t *executor) AddLedger(ctx context.Context, r gh.LedgerRow) error {
	_, err := t.q.Exec(ctx, `INSERT INTO ledger (session_id, run_id, user_key, provider, model, attempt, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, r.SessionID, r.RunID, r.UserKey, r.Provider, r.Model, r.Attempt, r.InputTokens, r.OutputTokens, r.CostUSD, r.DurationMs, r.Error, r.Created)
	return dbErr(err, "add ledger row")
}

func (t *executor) Ledger(ctx context.Context, sessionID string, limit int) ([]gh.LedgerRow, error) {
	rows, err := t.q.Query(ctx, `SELECT id, session_id, run_id, user_key, provider, model, attempt, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at
		FROM ledger WHERE session_id = $1 ORDER BY id LIMIT $2`, sessionID, limit)
	if err != nil {
		return nil, dbErr(err, "read ledger")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (gh.LedgerRow, error) {
		var r gh.LedgerRow
		err := row.Scan(&r.ID, &r.SessionID, &r.RunID, &r.UserKey, &r.Provider, &r.Model, &r.Attempt, &r.InputTokens, &r.OutputTokens, &r.CostUSD, &r.DurationMs, &r.Error, &r.Created)
		r.Created = r.Created.UTC()
		return r, err
	})
	return out, dbErr(err, "read ledger")
}

func (t *executor) HasClaimable(ctx context.Context, now time.Time) (bool, error) {
	var ok bool
	err := t.q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE state = 'running' AND lease_expires_at <= $1)
		OR EXISTS (SELECT 1 FROM runs WHERE state = 'queued' AND available_at <= $1)`, now).Scan(&ok)
	return ok, dbErr(err, "check claimable")
}

func (t *executor) Usage(ctx context.Context, by string, since time.Time, userKey string) ([]gh.UsageRow, error) {
	key := "user_key"
	if by == "model" {
		key = "provider || ':' || model"
	}
	rows, err := t.q.Query(ctx, `SELECT `+key+` AS k, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0)::float8
		FROM ledger WHERE created_at >= $1 AND ($2 = '' OR user_key = $2) GROUP BY k ORDER BY k`, since, userKey)
	if err != nil {
		return nil, dbErr(err, "sum ledger")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.UsageRow, error) {
		var u gh.UsageRow
		err := r.Scan(&u.Key, &u.Calls, &u.InputTokens, &u.OutputTokens, &u.CostUSD)
		return u, err
	})
	return out, dbErr(err, "sum ledger")
}

// RunCost implements store.Reader (index ledger_run).
func (t *executor) RunCost(ctx context.Context, runID int64) (gh.Usage, float64, error) {
	var u gh.Usage
	var cost float64
	err := t.q.QueryRow(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost_usd), 0) FROM ledger WHERE run_id = $1`, runID).
		Scan(&u.InputTokens, &u.OutputTokens, &cost)
	return u, cost, dbErr(err, "read run cost")
}
