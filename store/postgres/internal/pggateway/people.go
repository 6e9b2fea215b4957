package pggateway

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

// GetPairingCode returns a code in any state, or a CodeNotFound error.
func GetPairingCode(ctx context.Context, q Querier, code string) (store.PairingCode, error) {
	c, err := scanPairing(q.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairing_codes WHERE code = $1`, code))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, gh.Errorf(gh.CodeNotFound, "no pairing code %q", code)
	}
	return c, dbErr(err, "get pairing code")
}

// LivePairingCode returns the user's pending code unexpired at now.
func LivePairingCode(ctx context.Context, q Querier, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	c, err := scanPairing(q.QueryRow(ctx, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE platform = $1 AND user_id = $2 AND state = 'pending' AND expires_at > $3`, platform, userID, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, dbErr(err, "live pairing code")
}

// CountPairingCodes counts the user's codes given at or after since.
func CountPairingCodes(ctx context.Context, q Querier, platform, userID string, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM pairing_codes WHERE platform = $1 AND user_id = $2 AND created_at >= $3`,
		platform, userID, since).Scan(&n)
	return n, dbErr(err, "count pairing codes")
}

// PendingPairingCodes lists pending codes unexpired at now, newest first.
func PendingPairingCodes(ctx context.Context, q Querier, now time.Time, limit int) ([]store.PairingCode, error) {
	return collect(ctx, q, "pending pairing codes", scanPairing, `SELECT `+pairingCols+` FROM pairing_codes
		WHERE state = 'pending' AND expires_at > $1 ORDER BY created_at DESC, code LIMIT $2`, now, limit)
}

const personCols = `platform, user_id, user_name, code, approved_by, approved_at`

func scanPerson(row pgx.Row) (store.Person, error) {
	var p store.Person
	err := row.Scan(&p.Platform, &p.UserID, &p.UserName, &p.Code, &p.ApprovedBy, &p.Approved)
	p.Approved = p.Approved.UTC()
	return p, err
}

// GetPerson returns the person let in as userID on platform, if any.
func GetPerson(ctx context.Context, q Querier, platform, userID string) (store.Person, bool, error) {
	p, err := scanPerson(q.QueryRow(ctx, `SELECT `+personCols+` FROM people WHERE platform = $1 AND user_id = $2`, platform, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, dbErr(err, "get person")
}

// ListPeople lists the people let in, most recently approved first.
func ListPeople(ctx context.Context, q Querier, limit int) ([]store.Person, error) {
	return collect(ctx, q, "list people", scanPerson, `SELECT `+personCols+` FROM people ORDER BY approved_at DESC, platform, user_id LIMIT $1`, limit)
}

// InsertPairingCode closes the user's expired pending codes and stores c
// as their pending code, unless they have a live one: two statements that
// commit together, so q is a transaction's connection.
func InsertPairingCode(ctx context.Context, q Querier, c store.PairingCode) (bool, error) {
	if _, err := q.Exec(ctx, `UPDATE pairing_codes SET state = 'expired', closed_at = $1
		WHERE platform = $2 AND user_id = $3 AND state = 'pending' AND expires_at <= $1`, c.Created, c.Platform, c.UserID); err != nil {
		return false, dbErr(err, "close expired pairing codes")
	}
	tag, err := q.Exec(ctx, `INSERT INTO pairing_codes (code, platform, user_id, user_name, chat_id, text, state, created_at, expires_at)
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

// ClosePairingCode moves a pending code to state at now.
func ClosePairingCode(ctx context.Context, q Querier, code, state string, now time.Time) (bool, error) {
	tag, err := q.Exec(ctx, `UPDATE pairing_codes SET state = $1, closed_at = $2 WHERE code = $3 AND state = 'pending'`, state, now, code)
	if err != nil {
		return false, dbErr(err, "close pairing code")
	}
	return tag.RowsAffected() == 1, nil
}

// PutPerson inserts or, when the person is in already, reads the stored
// row: the read runs after the insert found the row, with its own
// snapshot (read committed), so it sees it.
func PutPerson(ctx context.Context, q Querier, p store.Person) (store.Person, bool, error) {
	stored, err := scanPerson(q.QueryRow(ctx, `INSERT INTO people (platform, user_id, user_name, code, approved_by, approved_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (platform, user_id) DO NOTHING RETURNING `+personCols,
		p.Platform, p.UserID, p.UserName, p.Code, p.ApprovedBy, p.Approved))
	if errors.Is(err, pgx.ErrNoRows) {
		stored, _, err = GetPerson(ctx, q, p.Platform, p.UserID)
		return stored, false, err
	}
	return stored, err == nil, dbErr(err, "put person")
}

// DeletePerson revokes a person; false when they were not in.
func DeletePerson(ctx context.Context, q Querier, platform, userID string) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM people WHERE platform = $1 AND user_id = $2`, platform, userID)
	if err != nil {
		return false, dbErr(err, "delete person")
	}
	return tag.RowsAffected() == 1, nil
}

// PrunePairingCodes deletes at most limit codes given before before.
func PrunePairingCodes(ctx context.Context, q Querier, before time.Time, limit int) (int, error) {
	tag, err := q.Exec(ctx, `DELETE FROM pairing_codes WHERE code IN (SELECT code FROM pairing_codes WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
		before, limit)
	if err != nil {
		return 0, dbErr(err, "prune pairing codes")
	}
	return int(tag.RowsAffected()), nil
}

const zoneCols = `user_key, platform, user_id, user_name, zone, set_by, set_at`

func scanZone(row pgx.Row) (store.PersonZone, error) {
	var z store.PersonZone
	err := row.Scan(&z.UserKey, &z.Platform, &z.UserID, &z.UserName, &z.Zone, &z.SetBy, &z.Set)
	z.Set = z.Set.UTC()
	return z, err
}

// GetPersonZone returns the zone set for the person, if any.
func GetPersonZone(ctx context.Context, q Querier, userKey string) (store.PersonZone, bool, error) {
	z, err := scanZone(q.QueryRow(ctx, `SELECT `+zoneCols+` FROM person_zones WHERE user_key = $1`, userKey))
	if errors.Is(err, pgx.ErrNoRows) {
		return z, false, nil
	}
	return z, err == nil, dbErr(err, "get person zone")
}

// ListPersonZones lists the zones set, most recently set first.
func ListPersonZones(ctx context.Context, q Querier, limit int) ([]store.PersonZone, error) {
	return collect(ctx, q, "list person zones", scanZone, `SELECT `+zoneCols+` FROM person_zones ORDER BY set_at DESC, user_key LIMIT $1`, limit)
}

// PutPersonZone sets z, replacing the person's zone set before.
func PutPersonZone(ctx context.Context, q Querier, z store.PersonZone) error {
	_, err := q.Exec(ctx, `INSERT INTO person_zones (`+zoneCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (user_key) DO UPDATE SET platform = excluded.platform, user_id = excluded.user_id, user_name = excluded.user_name,
		zone = excluded.zone, set_by = excluded.set_by, set_at = excluded.set_at`,
		z.UserKey, z.Platform, z.UserID, z.UserName, z.Zone, z.SetBy, z.Set)
	return dbErr(err, "put person zone")
}

// DeletePersonZone clears a person's zone; false when none was set.
func DeletePersonZone(ctx context.Context, q Querier, userKey string) (bool, error) {
	tag, err := q.Exec(ctx, `DELETE FROM person_zones WHERE user_key = $1`, userKey)
	if err != nil {
		return false, dbErr(err, "delete person zone")
	}
	return tag.RowsAffected() == 1, nil
}
