package sqlgateway

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

// GetPairingCode returns a code in any state, or a CodeNotFound error.
func GetPairingCode(ctx context.Context, q Querier, code string) (store.PairingCode, error) {
	c, err := scanPairing(q.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM pairing_codes WHERE code = ?`, code))
	if errors.Is(err, sql.ErrNoRows) {
		return c, gh.Errorf(gh.CodeNotFound, "no pairing code %q", code)
	}
	return c, dbErr(err, "get pairing code")
}

// LivePairingCode returns the user's pending code unexpired at now.
func LivePairingCode(ctx context.Context, q Querier, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	c, err := scanPairing(q.QueryRowContext(ctx, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE platform = ? AND user_id = ? AND state = 'pending' AND expires_at > ?`, platform, userID, micros(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, dbErr(err, "live pairing code")
}

// CountPairingCodes counts the user's codes given at or after since.
func CountPairingCodes(ctx context.Context, q Querier, platform, userID string, since time.Time) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM pairing_codes WHERE platform = ? AND user_id = ? AND created_at >= ?`,
		platform, userID, micros(since)).Scan(&n)
	return n, dbErr(err, "count pairing codes")
}

// PendingPairingCodes lists pending codes unexpired at now, newest first.
func PendingPairingCodes(ctx context.Context, q Querier, now time.Time, limit int) ([]store.PairingCode, error) {
	return sqlrow.QueryAll(ctx, q, "pending pairing codes", scanPairing, `SELECT `+pairingCols+` FROM pairing_codes
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

// GetPerson returns the person let in as userID on platform, if any.
func GetPerson(ctx context.Context, q Querier, platform, userID string) (store.Person, bool, error) {
	p, err := scanPerson(q.QueryRowContext(ctx, `SELECT `+personCols+` FROM people WHERE platform = ? AND user_id = ?`, platform, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, dbErr(err, "get person")
}

// ListPeople lists the people let in, most recently approved first.
func ListPeople(ctx context.Context, q Querier, limit int) ([]store.Person, error) {
	return sqlrow.QueryAll(ctx, q, "list people", scanPerson, `SELECT `+personCols+` FROM people ORDER BY approved_at DESC, platform, user_id LIMIT ?`, limit)
}

// InsertPairingCode closes the user's expired pending codes and stores c
// as their pending code, unless they have a live one (two statements: run
// it in a transaction).
func InsertPairingCode(ctx context.Context, q Querier, c store.PairingCode) (bool, error) {
	at := micros(c.Created)
	if _, err := q.ExecContext(ctx, `UPDATE pairing_codes SET state = 'expired', closed_at = ?
		WHERE platform = ? AND user_id = ? AND state = 'pending' AND expires_at <= ?`, at, c.Platform, c.UserID, at); err != nil {
		return false, dbErr(err, "close expired pairing codes")
	}
	res, err := q.ExecContext(ctx, `INSERT INTO pairing_codes (code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at)
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

// ClosePairingCode moves a pending code to state at now.
func ClosePairingCode(ctx context.Context, q Querier, code, state string, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE pairing_codes SET state = ?, closed_at = ? WHERE code = ? AND state = 'pending'`, state, micros(now), code)
	if err != nil {
		return false, dbErr(err, "close pairing code")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// PutPerson lets p in unless they are in already, and returns the stored
// row (two statements when they are: run it in a transaction).
func PutPerson(ctx context.Context, q Querier, p store.Person) (store.Person, bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO people (platform, user_id, user_name, code, approved_by, approved_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (platform, user_id) DO NOTHING`, p.Platform, p.UserID, p.UserName, p.Code, p.ApprovedBy, micros(p.Approved))
	if err != nil {
		return p, false, dbErr(err, "put person")
	}
	created, _ := res.RowsAffected()
	stored, _, err := GetPerson(ctx, q, p.Platform, p.UserID)
	return stored, created == 1, err
}

// DeletePerson revokes a person; false when they were not in.
func DeletePerson(ctx context.Context, q Querier, platform, userID string) (bool, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM people WHERE platform = ? AND user_id = ?`, platform, userID)
	if err != nil {
		return false, dbErr(err, "delete person")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// PrunePairingCodes deletes at most limit codes given before before.
func PrunePairingCodes(ctx context.Context, q Querier, before time.Time, limit int) (int, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM pairing_codes WHERE code IN (SELECT code FROM pairing_codes WHERE created_at < ? ORDER BY created_at LIMIT ?)`,
		micros(before), limit)
	if err != nil {
		return 0, dbErr(err, "prune pairing codes")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

const zoneCols = `user_key, platform, user_id, user_name, zone, set_by, set_at`

func scanZone(row rowScanner) (store.PersonZone, error) {
	var z store.PersonZone
	var at int64
	err := row.Scan(&z.UserKey, &z.Platform, &z.UserID, &z.UserName, &z.Zone, &z.SetBy, &at)
	z.Set = fromMicros(at)
	return z, err
}

// GetPersonZone returns the zone set for the person, if any.
func GetPersonZone(ctx context.Context, q Querier, userKey string) (store.PersonZone, bool, error) {
	z, err := scanZone(q.QueryRowContext(ctx, `SELECT `+zoneCols+` FROM person_zones WHERE user_key = ?`, userKey))
	if errors.Is(err, sql.ErrNoRows) {
		return z, false, nil
	}
	return z, err == nil, dbErr(err, "get person zone")
}

// ListPersonZones lists the zones set, most recently set first.
func ListPersonZones(ctx context.Context, q Querier, limit int) ([]store.PersonZone, error) {
	return sqlrow.QueryAll(ctx, q, "list person zones", scanZone, `SELECT `+zoneCols+` FROM person_zones ORDER BY set_at DESC, user_key LIMIT ?`, limit)
}

// PutPersonZone sets z, replacing the person's zone set before.
func PutPersonZone(ctx context.Context, q Querier, z store.PersonZone) error {
	_, err := q.ExecContext(ctx, `INSERT INTO person_zones (`+zoneCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_key) DO UPDATE SET platform = excluded.platform, user_id = excluded.user_id, user_name = excluded.user_name,
		zone = excluded.zone, set_by = excluded.set_by, set_at = excluded.set_at`,
		z.UserKey, z.Platform, z.UserID, z.UserName, z.Zone, z.SetBy, micros(z.Set))
	return dbErr(err, "put person zone")
}

// DeletePersonZone clears a person's zone; false when none was set.
func DeletePersonZone(ctx context.Context, q Querier, userKey string) (bool, error) {
	res, err := q.ExecContext(ctx, `DELETE FROM person_zones WHERE user_key = ?`, userKey)
	if err != nil {
		return false, dbErr(err, "delete person zone")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
