package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

const gateCols = `id, session_id, run_id, tool_call_id, tool, arguments, args_hash, kind, question, options, state, decided_by, surface, reason, answer, decided_at, expires_at, created_at, logged`

func scanGate(row pgx.Row) (gh.Gate, error) {
	var g gh.Gate
	var args, options []byte
	var decided *time.Time
	err := row.Scan(&g.ID, &g.SessionID, &g.RunID, &g.ToolCallID, &g.Tool, &args, &g.ArgsHash, &g.Kind, &g.Question, &options,
		&g.State, &g.DecidedBy, &g.Surface, &g.Reason, &g.Answer, &decided, &g.ExpiresAt, &g.Created, &g.Committed)
	if err != nil {
		return g, err
	}
	g.Arguments = args
	_ = json.Unmarshal(options, &g.Options)
	if decided != nil {
		g.DecidedAt = decided.UTC()
	}
	g.ExpiresAt, g.Created = g.ExpiresAt.UTC(), g.Created.UTC()
	return g, nil
}

func (t *executor) InsertGate(ctx context.Context, g gh.Gate) (bool, error) {
	options, _ := json.Marshal(g.Options)
	if g.Options == nil {
		options = []byte("[]")
	}
	tag, err := t.q.Exec(ctx, `INSERT INTO gates (id, session_id, run_id, tool_call_id, tool, arguments, args_hash, kind, question, options, state, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10::jsonb, 'pending', $11, $12) ON CONFLICT (id) DO NOTHING`,
		g.ID, g.SessionID, g.RunID, g.ToolCallID, g.Tool, string(g.Arguments), g.ArgsHash, g.Kind, g.Question, string(options), g.ExpiresAt, g.Created)
	if err != nil {
		return false, dbErr(err, "insert gate")
	}
	return tag.RowsAffected() == 1, nil
}

func (t *executor) GetGate(ctx context.Context, id string) (gh.Gate, error) {
	return t.getGate(ctx, id, "")
}

// getGate reads a gate and its approvals; lock is "" or " FOR UPDATE".
func (t *executor) getGate(ctx context.Context, id, lock string) (gh.Gate, error) {
	g, err := scanGate(t.q.QueryRow(ctx, `SELECT `+gateCols+` FROM gates WHERE id = $1`+lock, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return gh.Gate{}, gh.Errorf(gh.CodeNotFound, "no gate %q", id)
	}
	if err != nil {
		return g, dbErr(err, "get gate")
	}
	g.Approvals, err = t.gateApprovals(ctx, id)
	return g, err
}

// gateApprovals are the approvals recorded on a gate, oldest first.
func (t *executor) gateApprovals(ctx context.Context, id string) ([]gh.GateApproval, error) {
	rows, err := t.q.Query(ctx, `SELECT person, by_name, surface, needed, at FROM gate_approvals WHERE gate_id = $1 ORDER BY at, person`, id)
	if err != nil {
		return nil, dbErr(err, "gate approvals")
	}
	defer rows.Close()
	var out []gh.GateApproval
	for rows.Next() {
		var a gh.GateApproval
		if err := rows.Scan(&a.Person, &a.By, &a.Surface, &a.Needed, &a.At); err != nil {
			return nil, dbErr(err, "gate approvals")
		}
		a.At = a.At.UTC()
		out = append(out, a)
	}
	return out, dbErr(rows.Err(), "gate approvals")
}

func (t *executor) AddGateApproval(ctx context.Context, gateID string, a gh.GateApproval) (gh.Gate, bool, error) {
	// The gate's row locked: concurrent approvals of one gate count in
	// turn, so two people pressing at once cannot each see only their own.
	g, err := t.getGate(ctx, gateID, " FOR UPDATE")
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
	tag, err := t.q.Exec(ctx, `INSERT INTO gate_approvals (gate_id, person, by_name, surface, needed, at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (gate_id, person) DO NOTHING`, gateID, a.Person, a.By, a.Surface, a.Needed, a.At)
	if err != nil {
		return g, false, dbErr(err, "add gate approval")
	}
	g.Approvals, err = t.gateApprovals(ctx, gateID)
	return g, tag.RowsAffected() == 1, err
}

func (t *executor) DecideGate(ctx context.Context, d store.GateDecision) (gh.Gate, bool, error) {
	g, err := scanGate(t.q.QueryRow(ctx, `UPDATE gates SET
			state = CASE WHEN expires_at <= $1 THEN 'expired' ELSE $2 END,
			decided_by = CASE WHEN expires_at <= $1 THEN 'timeout' ELSE $3 END,
			surface = CASE WHEN expires_at <= $1 THEN 'gateway' ELSE $4 END,
			reason = CASE WHEN expires_at <= $1 THEN '' ELSE $5 END,
			answer = CASE WHEN expires_at <= $1 THEN '' ELSE $6 END,
			decided_at = $1
		WHERE id = $7 AND state = 'pending'
		RETURNING `+gateCols,
		d.Now, string(d.State), d.By, d.Surface, d.Reason, d.Answer, d.ID))
	if err == nil {
		return g, g.State == d.State, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return gh.Gate{}, false, dbErr(err, "decide gate")
	}
	g, err = t.GetGate(ctx, d.ID)
	return g, false, err
}

func (t *executor) MarkGateCommitted(ctx context.Context, id string) error {
	_, err := t.q.Exec(ctx, `UPDATE gates SET logged = TRUE WHERE id = $1`, id)
	return dbErr(err, "mark gate logged")
}

func (t *executor) gates(ctx context.Context, what, q string, args ...any) ([]gh.Gate, error) {
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gh.Gate, error) { return scanGate(r) })
	return out, dbErr(err, what)
}

func (t *executor) ListGates(ctx context.Context, sessionID string, state gh.GateState, limit int) ([]gh.Gate, error) {
	gs, err := t.gates(ctx, "list gates", `SELECT `+gateCols+` FROM gates WHERE ($1 = '' OR session_id = $1) AND ($2 = '' OR state = $2)
		ORDER BY created_at DESC, id LIMIT $3`, sessionID, string(state), limit)
	for i := range gs {
		if err == nil && gs[i].State == gh.GatePending {
			// Who approved so far, on a card that needs several.
			gs[i].Approvals, err = t.gateApprovals(ctx, gs[i].ID)
		}
	}
	return gs, err
}

func (t *executor) DueGates(ctx context.Context, now time.Time, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, "due gates", `SELECT `+gateCols+` FROM gates WHERE state = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`, now, limit)
}

func (t *executor) UnloggedGates(ctx context.Context, limit int) ([]gh.Gate, error) {
	return t.gates(ctx, "unlogged gates", `SELECT `+gateCols+` FROM gates WHERE state <> 'pending' AND NOT logged ORDER BY decided_at LIMIT $1`, limit)
}
