package sqlgateway

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlrow"
)

// The gateway's rows (see store/gateway.go). SQLite's single writer
// connection serialises every write transaction, which is the per-chat
// lock UpsertAddress promises.

// Querier is what the store runs statements on (sqlrow's, with its row
// helpers: the store's own codes, messages and times).
type Querier = sqlrow.Querier

type rowScanner = sqlrow.Scanner

var (
	dbErr      = sqlrow.DBErr
	micros     = sqlrow.Micros
	fromMicros = sqlrow.FromMicros
)

const receiveCols = `id, platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at`

func scanReceive(row rowScanner) (store.ReceiveEntry, error) {
	var e store.ReceiveEntry
	var at int64
	err := row.Scan(&e.ID, &e.Platform, &e.UpdateID, &e.ChatID, &e.ThreadID, &e.UserID, &e.UserName, &e.MessageID, &e.IsBot,
		&e.Text, &e.Outcome, &e.Reason, &e.Detail, &e.SessionID, &e.Seq, &at)
	e.ReceivedAt = fromMicros(at)
	return e, err
}

func receives(ctx context.Context, q Querier, query string, args ...any) ([]store.ReceiveEntry, error) {
	return sqlrow.QueryAll(ctx, q, "list receive log", scanReceive, query, args...)
}

// ReceiveByUpdate returns the first (non-duplicate) row of an update.
func ReceiveByUpdate(ctx context.Context, q Querier, platform, updateID string) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(q.QueryRowContext(ctx, `SELECT `+receiveCols+` FROM receive_log WHERE platform = ? AND update_id = ? AND reason <> 'duplicate'`, platform, updateID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "find update")
}

// ListReceive lists the receive log under a filter, newest first.
func ListReceive(ctx context.Context, q Querier, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"platform", f.Platform}, {"outcome", f.Outcome}, {"reason", f.Reason}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.Before > 0 {
		where = append(where, "id < ?")
		args = append(args, f.Before)
	}
	query := `SELECT ` + receiveCols + ` FROM receive_log`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	return receives(ctx, q, query+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

// LastReceive returns the newest row of a platform.
func LastReceive(ctx context.Context, q Querier, platform string) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(q.QueryRowContext(ctx, `SELECT `+receiveCols+` FROM receive_log WHERE platform = ? ORDER BY id DESC LIMIT 1`, platform))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "last receive")
}

// CountHandedOn counts a chat's updates handed on at or after since.
func CountHandedOn(ctx context.Context, q Querier, platform, chatID string, since time.Time) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM receive_log WHERE platform = ? AND chat_id = ? AND received_at >= ? AND outcome = 'handed_on'`,
		platform, chatID, micros(since)).Scan(&n)
	return n, dbErr(err, "count handed on")
}

const insertReceiveSQL = `INSERT INTO receive_log (platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func receiveArgs(e store.ReceiveEntry) []any {
	return []any{e.Platform, e.UpdateID, e.ChatID, e.ThreadID, e.UserID, e.UserName, e.MessageID, e.IsBot, e.Text, e.Outcome, e.Reason, e.Detail,
		e.SessionID, e.Seq, micros(e.ReceivedAt)}
}

// InsertReceive adds a row, or returns the update's first row when it has
// one (two statements: run it in a transaction).
func InsertReceive(ctx context.Context, q Querier, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	err := q.QueryRowContext(ctx, insertReceiveSQL+` ON CONFLICT DO NOTHING RETURNING id`, receiveArgs(e)...).Scan(&e.ID)
	if errors.Is(err, sql.ErrNoRows) {
		first, _, err := ReceiveByUpdate(ctx, q, e.Platform, e.UpdateID)
		return first, false, err
	}
	if err != nil {
		return e, false, dbErr(err, "insert receive log")
	}
	e.ReceivedAt = fromMicros(micros(e.ReceivedAt))
	return e, true, nil
}

// InsertReceiveNow is the insert InsertReceiveAtCommit defers to just
// before COMMIT: a second row of the update is a CodeConflict error.
func InsertReceiveNow(ctx context.Context, q Querier, e store.ReceiveEntry) error {
	_, err := q.ExecContext(ctx, insertReceiveSQL, receiveArgs(e)...)
	if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
		return gh.Wrap(gh.CodeConflict, err, "update %s of %s was received before", e.UpdateID, e.Platform)
	}
	return dbErr(err, "insert receive log")
}

const addressCols = `session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at`

func scanAddress(row rowScanner) (store.AddressEntry, error) {
	var a store.AddressEntry
	var created, updated int64
	err := row.Scan(&a.SessionID, &a.Platform, &a.ChatID, &a.ThreadID, &a.ChatType, &a.ReplyTo, &a.UserID, &a.Cursor, &created, &updated)
	a.Created, a.Updated = fromMicros(created), fromMicros(updated)
	return a, err
}

// AddressBySession returns a session's chat address, if it has one.
func AddressBySession(ctx context.Context, q Querier, sessionID string) (store.AddressEntry, bool, error) {
	a, err := scanAddress(q.QueryRowContext(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE session_id = ?`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, dbErr(err, "get address")
}

// AddressesBehind lists sessions whose log has grown past their cursor.
func AddressesBehind(ctx context.Context, q Querier, limit int) ([]store.AddressEntry, error) {
	return sqlrow.QueryAll(ctx, q, "addresses behind", scanAddress, `SELECT `+strings.ReplaceAll("a."+addressCols, ", ", ", a.")+`
		FROM chat_addresses a JOIN sessions s ON s.id = a.session_id WHERE s.last_seq > a.cursor ORDER BY s.updated_at LIMIT ?`, limit)
}

// touchChatSQL moves a known chat's row on: reply-to and user, when given.
const touchChatSQL = `UPDATE chat_addresses SET
		reply_to = CASE WHEN ? = '' THEN reply_to ELSE ? END, user_id = CASE WHEN ? = '' THEN user_id ELSE ? END, updated_at = ?
	WHERE platform = ? AND chat_id = ? AND thread_id = ? RETURNING ` + addressCols

// UpsertAddress creates the chat's row or moves it on (an insert, then a
// read or a touch: run it in a transaction).
func UpsertAddress(ctx context.Context, q Querier, e store.AddressEntry) (store.AddressEntry, bool, error) {
	now := micros(e.Updated)
	res, err := q.ExecContext(ctx, `INSERT INTO chat_addresses (session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (platform, chat_id, thread_id) DO NOTHING`,
		e.SessionID, e.Platform, e.ChatID, e.ThreadID, e.ChatType, e.ReplyTo, e.UserID, now, now)
	if err != nil {
		return e, false, dbErr(err, "insert address")
	}
	created, _ := res.RowsAffected()
	var a store.AddressEntry
	if created == 1 {
		a, err = scanAddress(q.QueryRowContext(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE platform = ? AND chat_id = ? AND thread_id = ?`, e.Platform, e.ChatID, e.ThreadID))
	} else {
		a, err = scanAddress(q.QueryRowContext(ctx, touchChatSQL, e.ReplyTo, e.ReplyTo, e.UserID, e.UserID, now, e.Platform, e.ChatID, e.ThreadID))
	}
	return a, created == 1, dbErr(err, "upsert address")
}

// TouchChat moves an existing chat's row on and counts its updates handed
// on since since (two statements: run it in a transaction).
func TouchChat(ctx context.Context, q Querier, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	a, err := scanAddress(q.QueryRowContext(ctx, touchChatSQL, e.ReplyTo, e.ReplyTo, e.UserID, e.UserID, micros(e.Updated), e.Platform, e.ChatID, e.ThreadID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, 0, nil
	}
	if err != nil {
		return a, false, 0, dbErr(err, "touch chat")
	}
	n, err := CountHandedOn(ctx, q, e.Platform, e.ChatID, since)
	return a, true, n, err
}

// AdvanceCursor moves a session's cursor up to seq (never down).
func AdvanceCursor(ctx context.Context, q Querier, sessionID string, seq int64, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE chat_addresses SET cursor = ?, updated_at = ? WHERE session_id = ? AND cursor < ?`, seq, micros(now), sessionID, seq)
	return dbErr(err, "advance cursor")
}

const outboxCols = `id, session_id, seq, platform, kind, payload, state, attempts, parts_sent, message_ids, last_error, owner, lease_until, available_at, created_at, updated_at`

func scanOutbox(row rowScanner) (store.OutboxEntry, error) {
	var e store.OutboxEntry
	var payload, ids string
	var lease, avail, created, updated int64
	err := row.Scan(&e.ID, &e.SessionID, &e.Seq, &e.Platform, &e.Kind, &payload, &e.State, &e.Attempts, &e.PartsSent, &ids, &e.LastError,
		&e.Owner, &lease, &avail, &created, &updated)
	if err != nil {
		return e, err
	}
	e.Payload = json.RawMessage(payload)
	_ = json.Unmarshal([]byte(ids), &e.MessageIDs)
	e.LeaseUntil, e.AvailableAt, e.Created, e.Updated = fromMicros(lease), fromMicros(avail), fromMicros(created), fromMicros(updated)
	return e, nil
}

func outbox(ctx context.Context, q Querier, query string, args ...any) ([]store.OutboxEntry, error) {
	return sqlrow.QueryAll(ctx, q, "list outbox", scanOutbox, query, args...)
}

// EnqueueOutbox adds a row unless (session, seq) has one.
func EnqueueOutbox(ctx context.Context, q Querier, e store.OutboxEntry) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO outbox (session_id, seq, platform, kind, payload, state, available_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT (session_id, seq) DO NOTHING`,
		e.SessionID, e.Seq, e.Platform, e.Kind, string(e.Payload), micros(e.AvailableAt), micros(e.Created), micros(e.Created))
	if err != nil {
		return false, dbErr(err, "enqueue outbox")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// OutboxDue lists a platform's sendable rows.
func OutboxDue(ctx context.Context, q Querier, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// The head of each session's queue (its lowest open seq), when that
	// head is pending and available: a session's rows go out in order.
	return outbox(ctx, q, `SELECT `+outboxCols+` FROM outbox o WHERE platform = ? AND state = 'pending' AND available_at <= ?
		AND seq = (SELECT min(seq) FROM outbox h WHERE h.platform = o.platform AND h.session_id = o.session_id AND h.state IN ('pending', 'sending'))
		ORDER BY available_at, id LIMIT ?`, platform, micros(now), limit)
}

// OutboxStuck lists a platform's rows left sending past their lease.
func OutboxStuck(ctx context.Context, q Querier, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return outbox(ctx, q, `SELECT `+outboxCols+` FROM outbox WHERE platform = ? AND state = 'sending' AND lease_until < ? ORDER BY id LIMIT ?`,
		platform, micros(now), limit)
}

// ListOutbox lists the outbox under a filter, newest first.
func ListOutbox(ctx context.Context, q Querier, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"platform", f.Platform}, {"state", f.State}, {"session_id", f.SessionID}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	query := `SELECT ` + outboxCols + ` FROM outbox`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	return outbox(ctx, q, query+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

// ClaimOutbox moves a pending row to sending for owner until until.
func ClaimOutbox(ctx context.Context, q Querier, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	e, err := scanOutbox(q.QueryRowContext(ctx, `UPDATE outbox SET state = 'sending', owner = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND state = 'pending' RETURNING `+outboxCols, owner, micros(until), micros(now), id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "claim outbox")
}

// UpdateOutbox writes a claimed row's outcome, if e.Owner holds it.
func UpdateOutbox(ctx context.Context, q Querier, e store.OutboxEntry) (bool, error) {
	ids, _ := json.Marshal(e.MessageIDs)
	if e.MessageIDs == nil {
		ids = []byte("[]")
	}
	res, err := q.ExecContext(ctx, `UPDATE outbox SET state = ?, attempts = ?, parts_sent = ?, message_ids = ?, last_error = ?,
			owner = CASE WHEN ? = 'sending' THEN owner ELSE '' END, lease_until = ?, available_at = ?, updated_at = ?
		WHERE id = ? AND owner = ? AND state = 'sending'`,
		e.State, e.Attempts, e.PartsSent, string(ids), e.LastError, e.State, micros(e.LeaseUntil), micros(e.AvailableAt), micros(e.Updated), e.ID, e.Owner)
	if err != nil {
		return false, dbErr(err, "update outbox")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// CountOutbox counts a platform's rows in a state.
func CountOutbox(ctx context.Context, q Querier, platform, state string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM outbox WHERE platform = ? AND state = ?`, platform, state).Scan(&n)
	return n, dbErr(err, "count outbox")
}

// PutGateCard records a gate's card, once.
func PutGateCard(ctx context.Context, q Querier, c store.GateCard) error {
	_, err := q.ExecContext(ctx, `INSERT INTO gate_cards (gate_id, session_id, platform, chat_id, thread_id, message_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.GateID, c.SessionID, c.Platform, c.ChatID, c.ThreadID, c.MessageID, micros(c.Created))
	return dbErr(err, "put gate card")
}

// GateCards lists a gate's cards, oldest first.
func GateCards(ctx context.Context, q Querier, gateID string) ([]store.GateCard, error) {
	return sqlrow.QueryAll(ctx, q, "gate cards", func(r rowScanner) (store.GateCard, error) {
		var c store.GateCard
		var created int64
		err := r.Scan(&c.GateID, &c.SessionID, &c.Platform, &c.ChatID, &c.ThreadID, &c.MessageID, &created)
		c.Created = fromMicros(created)
		return c, err
	}, `SELECT gate_id, session_id, platform, chat_id, thread_id, message_id, created_at FROM gate_cards WHERE gate_id = ? ORDER BY created_at`, gateID)
}

// GetPlatformLease returns the lease called name, if it is held.
func GetPlatformLease(ctx context.Context, q Querier, name string) (store.PlatformLease, bool, error) {
	var l store.PlatformLease
	var exp int64
	err := q.QueryRowContext(ctx, `SELECT name, owner, expires_at FROM platform_leases WHERE name = ?`, name).Scan(&l.Name, &l.Owner, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	l.ExpiresAt = fromMicros(exp)
	return l, err == nil, dbErr(err, "get platform lease")
}

// AcquirePlatformLease takes or renews the lease called name for owner.
func AcquirePlatformLease(ctx context.Context, q Querier, name, owner string, now, until time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO platform_leases (name, owner, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE platform_leases.owner = excluded.owner OR platform_leases.expires_at < ?`, name, owner, micros(until), micros(now))
	if err != nil {
		return false, dbErr(err, "acquire platform lease")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ReleasePlatformLease gives the lease up, if owner holds it.
func ReleasePlatformLease(ctx context.Context, q Querier, name, owner string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform_leases WHERE name = ? AND owner = ?`, name, owner)
	return dbErr(err, "release platform lease")
}

// Prune deletes old receive-log rows and sent or dead outbox rows, at
// most limit of each (two deletes: run it in a transaction).
func Prune(ctx context.Context, q Querier, before time.Time, limit int) (int, error) {
	n := 0
	for _, query := range []string{
		`DELETE FROM receive_log WHERE id IN (SELECT id FROM receive_log WHERE received_at < ? ORDER BY id LIMIT ?)`,
		`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state IN ('sent', 'dead') AND updated_at < ? ORDER BY id LIMIT ?)`,
	} {
		res, err := q.ExecContext(ctx, query, micros(before), limit)
		if err != nil {
			return n, dbErr(err, "prune gateway rows")
		}
		m, _ := res.RowsAffected()
		n += int(m)
	}
	return n, nil
}
