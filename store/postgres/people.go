package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Pairing codes and the people let in (see store/people.go). A sender's
// one pending code is kept by the partial unique index
// pairing_codes_pending: two replicas giving the same sender a code at
// once insert one, and the other's INSERT … ON CONFLICT waits for it and
// does nothing.

const pairingCols = `code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at, closed_at`

func scanPairing(row pgx.Row) (store.PairingCode, error) {
	var c store.PairingCode
	var closed *time.Time
	err := row.Scan(&c.Code, &c.Platform, &c.UserID, &c.UserName, &c.ChatID, &c.Text, &c.State, &c.Created, &c.ExpiresAt, &closed)
	c.Created, c.ExpiresAt = c.Created.UTC(), c.ExpiresAt.UTC()
	if closed != nil {
		c.Closed = closed.UTC()
	}
	return c, err
}

func (t *executor) pairingCodes(ctx context.Context, what, q string, args ...any) ([]store.PairingCode, error) {
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PairingCode, error) { return scanPairing(r) })
	return nilIfEmpty(out), dbErr(err, what)
}

func (t *executor) GetPairingCode(ctx context.Context, code string) (store.PairingCode, error) {
	c, err := scanPairing(t.q.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairing_codes WHERE code = $1`, code))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, gh.Errorf(gh.CodeNotFound, "no pairing code %q", code)
	}
	return c, dbErr(err, "get pairing code")
}

func (t *executor) LivePairingCode(ctx context.Context, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	c, err := scanPairing(t.q.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE platform = $1 AND user_id = $2 AND state = 'pending' AND expires_at > $3`, platform, userID, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, dbErr(err, "live pairing code")
}

func (t *executor) CountPairingCodes(ctx context.Context, platform, userID string, since time.Time) (int, error) {
	var n int
	err := t.q.QueryRow(ctx, `SELECT count(*) FROM pairing_codes WHERE platform = $1 AND user_id = $2 AND created_at >= $3`,
		platform, userID, since).Scan(&n)
	return n, dbErr(err, "count pairing codes")
}

func (t *executor) PendingPairingCodes(ctx context.Context, now time.Time, limit int) ([]store.PairingCode, error) {
	return t.pairingCodes(ctx, "pending pairing codes", `SELECT `+pairingCols+` FROM pairing_codes
		WHERE state = 'pending' AND expires_at > $1 ORDER BY created_at DESC, code LIMIT $2`, now, limit)
}

const personCols = `platform, user_id, user_name, code, approved_by, approved_at`

func scanPerson(row pgx.Row) (store.Person, error) {
	var p store.Person
	err := row.Scan(&p.Platform, &p.UserID, &p.UserName, &p.Code, &p.ApprovedBy, &p.Approved)
	p.Approved = p.Approved.UTC()
	return p, err
}

func (t *executor) GetPerson(ctx context.Context, platform, userID string) (store.Person, bool, error) {
	p, err := scanPerson(t.q.QueryRow(ctx, `SELECT `+personCols+` FROM people WHERE platform = $1 AND user_id = $2`, platform, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, dbErr(err, "get person")
}

func (t *executor) ListPeople(ctx context.Context, limit int) ([]store.Person, error) {
	rows, err := t.q.Query(ctx, `SELECT `+personCols+` FROM people ORDER BY approved_at DESC, platform, user_id LIMIT $1`, limit)
	if err != nil {
		return nil, dbErr(err, "list people")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Person, error) { return scanPerson(r) })
	return nilIfEmpty(out), dbErr(err, "list people")
}

// InsertPairingCode takes two statements that commit together: a tx
// method, run by the Store in a transaction of its own.
func (t *tx) InsertPairingCode(ctx context.Context, c store.PairingCode) (bool, error) {
	if _, err := t.q.Exec(ctx, `UPDATE pairing_codes SET state = 'expired', closed_at = $1
		WHERE platform = $2 AND user_id = $3 AND state = 'pending' AND expires_at <= $1`, c.Created, c.Platform, c.UserID); err != nil {
		return false, dbErr(err, "close expired pairing codes")
	}
	tag, err := t.q.Exec(ctx, `INSERT INTO pairing_codes (code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8) ON CONFLICT (platform, user_id) WHERE state = 'pending' DO NOTHING`,
		c.Code, c.Platform, c.UserID, c.UserName, c.ChatID, c.Text, c.Created, c.ExpiresAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return false, gh.Wrap(gh.CodeConflict, err, "pairing code %s is taken", c.Code)
	}
	if err != nil {
		return false, dbErr(err, "insert pairing code")
	}
	return tag.RowsAffected() == 1, nil
}

// InsertPairingCode implements store.Writer.
func (s *Store) InsertPairingCode(ctx context.Context, c store.PairingCode) (ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { ok, err = t.InsertPairingCode(ctx, c); return err })
	return ok, err
}

func (t *executor) ClosePairingCode(ctx context.Context, code, state string, now time.Time) (bool, error) {
	tag, err := t.q.Exec(ctx, `UPDATE pairing_codes SET state = $1, closed_at = $2 WHERE code = $3 AND state = 'pending'`, state, now, code)
	if err != nil {
		return false, dbErr(err, "close pairing code")
	}
	return tag.RowsAffected() == 1, nil
}

// PutPerson inserts or, when the person is in already, reads the stored
// row: the read runs after the insert found the row, with its own
// snapshot (read committed), so it sees it.
func (t *executor) PutPerson(ctx context.Context, p store.Person) (store.Person, bool, error) {
	stored, err := scanPerson(t.q.QueryRow(ctx, `INSERT INTO people (platform, user_id, user_name, code, approved_by, approved_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (platform, user_id) DO NOTHING RETURNING `+personCols,
		p.Platform, p.UserID, p.UserName, p.Code, p.ApprovedBy, p.Approved))
	if errors.Is(err, pgx.ErrNoRows) {
		stored, _, err = t.GetPerson(ctx, p.Platform, p.UserID)
		return stored, false, err
	}
	return stored, err == nil, dbErr(err, "put person")
}

func (t *executor) DeletePerson(ctx context.Context, platform, userID string) (bool, error) {
	tag, err := t.q.Exec(ctx, `DELETE FROM people WHERE platform = $1 AND user_id = $2`, platform, userID)
	if err != nil {
		return false, dbErr(err, "delete person")
	}
	return tag.RowsAffected() == 1, nil
}

func (t *executor) PrunePairingCodes(ctx context.Context, before time.Time, limit int) (int, error) {
	tag, err := t.q.Exec(ctx, `DELETE FROM pairing_codes WHERE code IN (SELECT code FROM pairing_codes WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
		before, limit)
	if err != nil {
		return 0, dbErr(err, "prune pairing codes")
	}
	return int(tag.RowsAffected()), nil
}
