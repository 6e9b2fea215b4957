package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

const gateCols = `id, session_id, run_id, tool_call_id, tool, arguments, args_hash, kind, question, options, state, decided_by, surface, reason, answer, decided_at, expires_at, created_at, logged`

func scanGate(row interface{ Scan(...any) error }) (gh.Gate, error) {
	var g gh.Gate
	var args, options string
	var decided, expires, created int64
	err := row.Scan(&g.ID, &g.SessionID, &g.RunID, &g.ToolCallID, &g.Tool, &args, &g.ArgsHash, &g.Kind, &g.Question, &options,
		&g.State, &g.DecidedBy, &g.Surface, &g.Reason, &g.Answer, &decided, &expires, &created, &g.Committed)
	if err != nil {
		return g, err
	}
	g.Arguments = json.RawMessage(args)
	_ = json.Unmarshal([]byte(options), &g.Options)
	g.DecidedAt, g.ExpiresAt, g.Created = fromMicros(decided), fromMicros(expires), fromMicros(created)
	return g, nil
}

func (t *writer) InsertGate(ctx context.Context, g gh.Gate) (bool, error) {
	options, _ := json.Marshal(g.Options)
	if g.Options == nil {
		options = []byte("[]")
	}
	res, err := t.q.ExecContext(ctx, `INSERT INTO gates (id, session_id, run_id, tool_call_id, tool, arguments, args_hash, kind, question, options, state, expires_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (id) DO NOTHING`,
		g.ID, g.SessionID, g.RunID, g.ToolCallID, g.Tool, string(g.Arguments), g.ArgsHash, g.Kind, g.Question, string(options), micros(g.ExpiresAt), micros(g.Created))
	if err != nil {
		return false, dbErr(err, "insert gate")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (t *reader) GetGate(ctx context.Context, id string) (gh.Gate, error) {
	g, err := scanGate(t.q.QueryRowContext(ctx, `SELECT `+gateCols+` FROM gates WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return gh.Gate{}, gh.Errorf(gh.CodeNotFound, "no gate %q", id)
	}
	if err != nil {
		return g, dbErr(err, "get gate")
	}
	g.Approvals, err = t.gateApprovals(ctx, id)
	return g, err
}

// gateApprovals are the approvals recorded on a gate, oldest first.
func (t *reader) gateApprovals(ctx context.Context, id string) ([]gh.GateApproval, error) {
	return sqlrow.QueryAll(ctx, t.q, "gate approvals", func(row interface{ Scan(...any) error }) (gh.GateApproval, error) {
		var a gh.GateApproval
		var at int64
		err := row.Scan(&a.Person, &a.By, &a.Surface, &a.Needed, &at)
		a.At = fromMicros(at)
		return a, err
	}, `SELECT person, by_name, surface, needed, at FROM gate_approvals WHERE gate_id = ? ORDER BY at, person`, id)
}

func (t *tx) AddGateApproval(ctx context.Context, gateID string, a gh.GateApproval) (gh.Gate, bool, error) {
	// The transaction holds SQLite's one writer: approvals count in turn.
	g, err := t.GetGate(ctx, gateID)
	if err != nil || g.State != gh.GatePending {
		return g, false, err
	}
	for _, o := range g.Approvals {
		if o.Person == a.Person {
			return g, false, nil
		}
	}
	if len(g.Approvals)+1 >= a.Needed {
		return g, false, nil
	}
	res, err := t.q.ExecContext(ctx, `INSERT INTO gate_approvals (gate_id, person, by_name, surface, needed, at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (gate_id, person) DO NOTHING`, gateID, a.Person, a.By, a.Surface, a.Needed, micros(a.At))
	if err != nil {
		return g, false, dbErr(err, "add gate approval")
	}
	n, _ := res.RowsAffected()
	g.Approvals, err = t.gateApprovals(ctx, gateID)
	return g, n == 1, err
}

func (t *tx) DecideGate(ctx context.Context, d store.GateDecision) (gh.Gate, bool, error) {
	g, err := scanGate(t.q.QueryRowContext(ctx, `UPDATE gates SET
			state = CASE WHEN expires_at <= ?1 THEN 'expired' ELSE ?2 END,
			decided_by = CASE WHEN expires_at <= ?1 THEN 'timeout' ELSE ?3 END,
			surface = CASE WHEN expires_at <= ?1 THEN 'gateway' ELSE ?4 END,
			reason = CASE WHEN expires_at <= ?1 THEN '' ELSE ?5 END,
			answer = CASE WHEN expires_at <= ?1 THEN '' ELSE ?6 END,
			decided_at = ?1
		WHERE id = ?7 AND state = 'pending'
		RETURNING `+gateCols,
		micros(d.Now), string(d.State), d.By, d.Surface, d.Reason, d.Answer, d.ID))
	if err == nil {
		return g, g.State == d.State, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return gh.Gate{}, false, dbErr(err, "decide gate")
	}
	g, err = t.GetGate(ctx, d.ID)
	return g, false, err
}

func (t *writer) MarkGateCommitted(ctx context.Context, id string) error {
	_, err := t.q.ExecContext(ctx, `UPDATE gates SET logged = 1 WHERE id = ?`, id)
	return dbErr(err, "mark gate logged")
}

func (t *reader) gates(ctx context.Context, what, q string, args ...any) ([]gh.Gate, error) {
	return sqlrow.QueryAll(ctx, t.q, what, scanGate, q, args...)
}

func (t *reader) ListGates(ctx context.Context, sessionID string, state gh.GateState, limit int) ([]gh.Gate, error) {
	gs, err := t.gates(ctx, "list gates", `SELECT `+gateCols+` FROM gates WHERE (?1 = '' OR session_id = ?1) AND (?2 = '' OR state = ?2)
		ORDER BY created_at DESC, id LIMIT ?3`, sessionID, string(state), limit)
	for i := range gs {
		if err == nil && gs[i].State == gh.GatePending {
			// Who approved so far, on a card that needs several.
			gs[i].Approvals, err = t.gateApprovals(ctx, gs[i].ID)
		}
	}
	return gs, err
}

func (t *reader) DueGates(ctx context.Context, now time.Time, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, "due gates", `SELECT `+gateCols+` FROM gates WHERE state = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?`, micros(now), limit)
}

func (t *reader) UnloggedGates(ctx context.Context, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, "unlogged gates", `SELECT `+gateCols+` FROM gates WHERE state <> 'pending' AND NOT logged ORDER BY decided_at LIMIT ?`, limit)
}

// DecideGate runs on the Store in a transaction of its own: after an
// update that found the gate decided, it reads the gate, and the read
// must see what the update saw.

// DecideGate implements store.Writer.
func (s *Store) DecideGate(ctx context.Context, d store.GateDecision) (g gh.Gate, won bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { g, won, err = t.DecideGate(ctx, d); return err })
	return g, won, err
}
