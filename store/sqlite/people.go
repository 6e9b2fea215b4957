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

// Pairing codes and the people let in (see store/people.go).

const pairingCols = `code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at, closed_at`

func scanPairing(row rowScanner) (store.PairingCode, error) {
	var c store.PairingCode
	var created, expires, closed int64
	err := row.Scan(&c.Code, &c.Platform, &c.UserID, &c.UserName, &c.ChatID, &c.Text, &c.State, &created, &expires, &closed)
	c.Created, c.ExpiresAt, c.Closed = fromMicros(created), fromMicros(expires), fromMicros(closed)
	return c, err
}

func (t *reader) GetPairingCode(ctx context.Context, code string) (store.PairingCode, error) {
	c, err := scanPairing(t.q.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM pairing_codes WHERE code = ?`, code))
	if errors.Is(err, sql.ErrNoRows) {
		return c, gh.Errorf(gh.CodeNotFound, "no pairing code %q", code)
	}
	return c, dbErr(err, "get pairing code")
}

func (t *reader) LivePairingCode(ctx context.Context, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	c, err := scanPairing(t.q.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE platform = ? AND user_id = ? AND state = 'pending' AND expires_at > ?`, platform, userID, micros(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, dbErr(err, "live pairing code")
}

func (t *reader) CountPairingCodes(ctx context.Context, platform, userID string, since time.Time) (int, error) {
	var n int
	err := t.q.QueryRowContext(ctx, `SELECT count(*) FROM pairing_codes WHERE platform = ? AND user_id = ? AND created_at >= ?`,
		platform, userID, micros(since)).Scan(&n)
	return n, dbErr(err, "count pairing codes")
}

func (t *reader) PendingPairingCodes(ctx context.Context, now time.Time, limit int) ([]store.PairingCode, error) {
	return sqlrow.QueryAll(ctx, t.q, "pending pairing codes", scanPairing, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE state = 'pending' AND expires_at > ? ORDER BY created_at DESC, code LIMIT ?`, micros(now), limit)
}

const personCols = `platform, user_id, user_name, code, approved_by, approved_at`

func scanPerson(row rowScanner) (store.Person, error) {
	var p store.Person
	var at int64
	err := row.Scan(&p.Platform, &p.UserID, &p.UserName, &p.Code, &p.ApprovedBy, &at)
	p.Approved = fromMicros(at)
	return p, err
}

func (t *reader) GetPerson(ctx context.Context, platform, userID string) (store.Person, bool, error) {
	p, err := scanPerson(t.q.QueryRowContext(ctx, `SELECT `+personCols+` FROM people WHERE platform = ? AND user_id = ?`, platform, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, dbErr(err, "get person")
}

func (t *reader) ListPeople(ctx context.Context, limit int) ([]store.Person, error) {
	return sqlrow.QueryAll(ctx, t.q, "list people", scanPerson, `SELECT `+personCols+` FROM people ORDER BY approved_at DESC, platform, user_id LIMIT ?`, limit)
}

// InsertPairingCode takes two statements: a tx method, run by the Store
// in a transaction of its own.
func (t *tx) InsertPairingCode(ctx context.Context, c store.PairingCode) (bool, error) {
	at := micros(c.Created)
	if _, err := t.q.ExecContext(ctx, `UPDATE pairing_codes SET state = 'expired', closed_at = ?
		WHERE platform = ? AND user_id = ? AND state = 'pending' AND expires_at <= ?`, at, c.Platform, c.UserID, at); err != nil {
		return false, dbErr(err, "close expired pairing codes")
	}
	res, err := t.q.ExecContext(ctx, `INSERT INTO pairing_codes (code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (platform, user_id) WHERE state = 'pending' DO NOTHING`,
		c.Code, c.Platform, c.UserID, c.UserName, c.ChatID, c.Text, at, micros(c.ExpiresAt))
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return false, gh.Wrap(gh.CodeConflict, err, "pairing code %s is taken", c.Code)
	}
	if err != nil {
		return false, dbErr(err, "insert pairing code")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// InsertPairingCode implements store.Writer.
func (s *Store) InsertPairingCode(ctx context.Context, c store.PairingCode) (ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { ok, err = t.InsertPairingCode(ctx, c); return err })
	return ok, err
}

func (t *writer) ClosePairingCode(ctx context.Context, code, state string, now time.Time) (bool, error) {
	res, err := t.q.ExecContext(ctx, `UPDATE pairing_codes SET state = ?, closed_at = ? WHERE code = ? AND state = 'pending'`, state, micros(now), code)
	if err != nil {
		return false, dbErr(err, "close pairing code")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// PutPerson takes two statements when the person is in already: a tx
// method, run by the Store in a transaction of its own.
func (t *tx) PutPerson(ctx context.Context, p store.Person) (store.Person, bool, error) {
	res, err := t.q.ExecContext(ctx, `INSERT INTO people (platform, user_id, user_name, code, approved_by, approved_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (platform, user_id) DO NOTHING`, p.Platform, p.UserID, p.UserName, p.Code, p.ApprovedBy, micros(p.Approved))
	if err != nil {
		return p, false, dbErr(err, "put person")
	}
	created, _ := res.RowsAffected()
	stored, _, err := t.GetPerson(ctx, p.Platform, p.UserID)
	return stored, created == 1, err
}

// PutPerson implements store.Writer.
func (s *Store) PutPerson(ctx context.Context, p store.Person) (out store.Person, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, created, err = t.PutPerson(ctx, p); return err })
	return out, created, err
}

func (t *writer) DeletePerson(ctx context.Context, platform, userID string) (bool, error) {
	res, err := t.q.ExecContext(ctx, `DELETE FROM people WHERE platform = ? AND user_id = ?`, platform, userID)
	if err != nil {
		return false, dbErr(err, "delete person")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (t *writer) PrunePairingCodes(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := t.q.ExecContext(ctx, `DELETE FROM pairing_codes WHERE code IN (SELECT code FROM pairing_codes WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
		micros(before), limit)
	if err != nil {
		return 0, dbErr(err, "prune pairing codes")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
