package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Grants (see store/grants.go). A revocation is one conditional UPDATE, so
// two replicas revoking at once record one revocation.

const grantCols = `id, session_id, gate_id, tool, bound, label, granted_by, surface, created_at, expires_at, revoked_by, revoked_at`

func scanGrant(row pgx.Row) (store.Grant, error) {
	var g store.Grant
	var revoked *time.Time
	err := row.Scan(&g.ID, &g.SessionID, &g.GateID, &g.Tool, &g.Bound, &g.Label, &g.GrantedBy, &g.Surface, &g.Created, &g.ExpiresAt, &g.RevokedBy, &revoked)
	g.Created, g.ExpiresAt = g.Created.UTC(), g.ExpiresAt.UTC()
	if revoked != nil {
		g.RevokedAt = revoked.UTC()
	}
	return g, err
}

func (t *executor) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	g, err := scanGrant(t.q.QueryRow(ctx, `SELECT `+grantCols+` FROM grants WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return g, gh.Errorf(gh.CodeNotFound, "no grant %q", id)
	}
	return g, dbErr(err, "get grant")
}

func (t *executor) ActiveGrant(ctx context.Context, sessionID, tool, bound string, now time.Time) (store.Grant, bool, error) {
	g, err := scanGrant(t.q.QueryRow(ctx, `SELECT `+grantCols+` FROM grants
		WHERE session_id = $1 AND tool = $2 AND bound = $3 AND expires_at > $4 AND revoked_at IS NULL
		ORDER BY expires_at DESC, id LIMIT 1`, sessionID, tool, bound, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return g, false, nil
	}
	return g, err == nil, dbErr(err, "active grant")
}

func (t *executor) ListGrants(ctx context.Context, sessionID string, active bool, now time.Time, limit int) ([]store.Grant, error) {
	q, args := `SELECT `+grantCols+` FROM grants WHERE true`, []any{}
	if sessionID != "" {
		args = append(args, sessionID)
		q += ` AND session_id = $` + strconv.Itoa(len(args))
	}
	if active {
		args = append(args, now)
		q += ` AND revoked_at IS NULL AND expires_at > $` + strconv.Itoa(len(args))
	}
	args = append(args, limit)
	rows, err := t.q.Query(ctx, q+` ORDER BY created_at DESC, id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, dbErr(err, "list grants")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Grant, error) { return scanGrant(r) })
	return nilIfEmpty(out), dbErr(err, "list grants")
}

// InsertGrant inserts or, when the id is taken, reads the stored row: the
// read runs after the insert found the row, with its own snapshot (read
// committed), so it sees it.
func (t *executor) InsertGrant(ctx context.Context, g store.Grant) (store.Grant, bool, error) {
	stored, err := scanGrant(t.q.QueryRow(ctx, `INSERT INTO grants (id, session_id, gate_id, tool, bound, label, granted_by, surface, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING RETURNING `+grantCols,
		g.ID, g.SessionID, g.GateID, g.Tool, g.Bound, g.Label, g.GrantedBy, g.Surface, g.Created, g.ExpiresAt))
	if errors.Is(err, pgx.ErrNoRows) {
		stored, err = t.GetGrant(ctx, g.ID)
		return stored, false, err
	}
	return stored, err == nil, dbErr(err, "insert grant")
}

func (t *executor) RevokeGrant(ctx context.Context, id, by string, now time.Time) (store.Grant, bool, error) {
	g, err := scanGrant(t.q.QueryRow(ctx, `UPDATE grants SET revoked_by = $1, revoked_at = $2 WHERE id = $3 AND revoked_at IS NULL RETURNING `+grantCols,
		by, now, id))
	if errors.Is(err, pgx.ErrNoRows) {
		g, err = t.GetGrant(ctx, id)
		return g, false, err
	}
	return g, err == nil, dbErr(err, "revoke grant")
}

// nilIfEmpty makes an empty list nil, as the SQLite store returns it.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
