package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// Grants (see store/grants.go).

const grantCols = `id, session_id, gate_id, tool, bound, label, granted_by, surface, created_at, expires_at, revoked_by, revoked_at`

func scanGrant(row rowScanner) (store.Grant, error) {
	var g store.Grant
	var created, expires, revoked int64
	err := row.Scan(&g.ID, &g.SessionID, &g.GateID, &g.Tool, &g.Bound, &g.Label, &g.GrantedBy, &g.Surface, &created, &expires, &g.RevokedBy, &revoked)
	g.Created, g.ExpiresAt, g.RevokedAt = fromMicros(created), fromMicros(expires), fromMicros(revoked)
	return g, err
}

func (t *reader) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	g, err := scanGrant(t.q.QueryRowContext(ctx, `SELECT `+grantCols+` FROM grants WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return g, gh.Errorf(gh.CodeNotFound, "no grant %q", id)
	}
	return g, dbErr(err, "get grant")
}

func (t *reader) ActiveGrant(ctx context.Context, sessionID, tool, bound string, now time.Time) (store.Grant, bool, error) {
	g, err := scanGrant(t.q.QueryRowContext(ctx, `SELECT `+grantCols+` FROM grants
		WHERE session_id = ? AND tool = ? AND bound = ? AND expires_at > ? AND revoked_at = 0
		ORDER BY expires_at DESC, id LIMIT 1`, sessionID, tool, bound, micros(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return g, false, nil
	}
	return g, err == nil, dbErr(err, "active grant")
}

func (t *reader) ListGrants(ctx context.Context, sessionID string, active bool, now time.Time, limit int) ([]store.Grant, error) {
	q, args := `SELECT `+grantCols+` FROM grants WHERE 1 = 1`, []any{}
	if sessionID != "" {
		q, args = q+` AND session_id = ?`, append(args, sessionID)
	}
	if active {
		q, args = q+` AND revoked_at = 0 AND expires_at > ?`, append(args, micros(now))
	}
	return sqlrow.QueryAll(ctx, t.q, "list grants", scanGrant, q+` ORDER BY created_at DESC, id LIMIT ?`, append(args, limit)...)
}

// InsertGrant takes two statements: a tx method, run by the Store in a
// transaction of its own.
func (t *tx) InsertGrant(ctx context.Context, g store.Grant) (store.Grant, bool, error) {
	res, err := t.q.ExecContext(ctx, `INSERT INTO grants (id, session_id, gate_id, tool, bound, label, granted_by, surface, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		g.ID, g.SessionID, g.GateID, g.Tool, g.Bound, g.Label, g.GrantedBy, g.Surface, micros(g.Created), micros(g.ExpiresAt))
	if err != nil {
		return g, false, dbErr(err, "insert grant")
	}
	n, _ := res.RowsAffected()
	stored, err := t.GetGrant(ctx, g.ID)
	return stored, n == 1, err
}

// InsertGrant implements store.Writer.
func (s *Store) InsertGrant(ctx context.Context, g store.Grant) (out store.Grant, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, created, err = t.InsertGrant(ctx, g); return err })
	return out, created, err
}

// RevokeGrant takes two statements: a tx method, run by the Store in a
// transaction of its own.
func (t *tx) RevokeGrant(ctx context.Context, id, by string, now time.Time) (store.Grant, bool, error) {
	res, err := t.q.ExecContext(ctx, `UPDATE grants SET revoked_by = ?, revoked_at = ? WHERE id = ? AND revoked_at = 0`, by, micros(now), id)
	if err != nil {
		return store.Grant{}, false, dbErr(err, "revoke grant")
	}
	n, _ := res.RowsAffected()
	g, err := t.GetGrant(ctx, id)
	return g, n == 1 && err == nil, err
}

// RevokeGrant implements store.Writer.
func (s *Store) RevokeGrant(ctx context.Context, id, by string, now time.Time) (out store.Grant, revoked bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error {
		out, revoked, err = t.RevokeGrant(ctx, id, by, now)
		return err
	})
	return out, revoked, err
}
