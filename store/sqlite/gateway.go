package sqlite

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

const receiveCols = `id, platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at`

func scanReceive(row interface{ Scan(...any) error }) (store.ReceiveEntry, error) {
	var e store.ReceiveEntry
	var at int64
	err := row.Scan(&e.ID, &e.Platform, &e.UpdateID, &e.ChatID, &e.ThreadID, &e.UserID, &e.UserName, &e.MessageID, &e.IsBot,
		&e.Text, &e.Outcome, &e.Reason, &e.Detail, &e.SessionID, &e.Seq, &at)
	e.ReceivedAt = fromMicros(at)
	return e, err
}

func (t *reader) receives(ctx context.Context, q string, args ...any) ([]store.ReceiveEntry, error) {
	return sqlrow.QueryAll(ctx, t.q, "list receive log", scanReceive, q, args...)
}

func (t *reader) ReceiveByUpdate(ctx context.Context, platform, updateID string) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(t.q.QueryRowContext(ctx, `SELECT `+receiveCols+` FROM receive_log WHERE platform = ? AND update_id = ? AND reason <> 'duplicate'`, platform, updateID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "find update")
}

func (t *reader) ListReceive(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
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
	q := `SELECT ` + receiveCols + ` FROM receive_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return t.receives(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

func (t *reader) LastReceive(ctx context.Context, platform string) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(t.q.QueryRowContext(ctx, `SELECT `+receiveCols+` FROM receive_log WHERE platform = ? ORDER BY id DESC LIMIT 1`, platform))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "last receive")
}

func (t *reader) CountHandedOn(ctx context.Context, platform, chatID string, since time.Time) (int, error) {
	var n int
	err := t.q.QueryRowContext(ctx, `SELECT count(*) FROM receive_log WHERE platform = ? AND chat_id = ? AND received_at >= ? AND outcome = 'handed_on'`,
		platform, chatID, micros(since)).Scan(&n)
	return n, dbErr(err, "count handed on")
}

const insertReceiveSQL = `INSERT INTO receive_log (platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func receiveArgs(e store.ReceiveEntry) []any {
	return []any{e.Platform, e.UpdateID, e.ChatID, e.ThreadID, e.UserID, e.UserName, e.MessageID, e.IsBot, e.Text, e.Outcome, e.Reason, e.Detail,
		e.SessionID, e.Seq, micros(e.ReceivedAt)}
}

func (t *tx) InsertReceive(ctx context.Context, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	err := t.q.QueryRowContext(ctx, insertReceiveSQL+` ON CONFLICT DO NOTHING RETURNING id`, receiveArgs(e)...).Scan(&e.ID)
	if errors.Is(err, sql.ErrNoRows) {
		first, _, err := t.ReceiveByUpdate(ctx, e.Platform, e.UpdateID)
		return first, false, err
	}
	if err != nil {
		return e, false, dbErr(err, "insert receive log")
	}
	e.ReceivedAt = fromMicros(micros(e.ReceivedAt))
	return e, true, nil
}

const addressCols = `session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at`

func scanAddress(row interface{ Scan(...any) error }) (store.AddressEntry, error) {
	var a store.AddressEntry
	var created, updated int64
	err := row.Scan(&a.SessionID, &a.Platform, &a.ChatID, &a.ThreadID, &a.ChatType, &a.ReplyTo, &a.UserID, &a.Cursor, &created, &updated)
	a.Created, a.Updated = fromMicros(created), fromMicros(updated)
	return a, err
}

func (t *reader) AddressBySession(ctx context.Context, sessionID string) (store.AddressEntry, bool, error) {
	a, err := scanAddress(t.q.QueryRowContext(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE session_id = ?`, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, dbErr(err, "get address")
}

func (t *reader) AddressesBehind(ctx context.Context, limit int) ([]store.AddressEntry, error) {
	return sqlrow.QueryAll(ctx, t.q, "addresses behind", scanAddress, `SELECT `+strings.ReplaceAll("a."+addressCols, ", ", ", a.")+`
		FROM chat_addresses a JOIN sessions s ON s.id = a.session_id WHERE s.last_seq > a.cursor ORDER BY s.updated_at LIMIT ?`, limit)
}

// touchChatSQL moves a known chat's row on: reply-to and user, when given.
const touchChatSQL = `UPDATE chat_addresses SET
		reply_to = CASE WHEN ? = '' THEN reply_to ELSE ? END, user_id = CASE WHEN ? = '' THEN user_id ELSE ? END, updated_at = ?
	WHERE platform = ? AND chat_id = ? AND thread_id = ? RETURNING ` + addressCols

func (t *tx) UpsertAddress(ctx context.Context, e store.AddressEntry) (store.AddressEntry, bool, error) {
	now := micros(e.Updated)
	res, err := t.q.ExecContext(ctx, `INSERT INTO chat_addresses (session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (platform, chat_id, thread_id) DO NOTHING`,
		e.SessionID, e.Platform, e.ChatID, e.ThreadID, e.ChatType, e.ReplyTo, e.UserID, now, now)
	if err != nil {
		return e, false, dbErr(err, "insert address")
	}
	created, _ := res.RowsAffected()
	var a store.AddressEntry
	if created == 1 {
		a, err = scanAddress(t.q.QueryRowContext(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE platform = ? AND chat_id = ? AND thread_id = ?`, e.Platform, e.ChatID, e.ThreadID))
	} else {
		a, err = scanAddress(t.q.QueryRowContext(ctx, touchChatSQL, e.ReplyTo, e.ReplyTo, e.UserID, e.UserID, now, e.Platform, e.ChatID, e.ThreadID))
	}
	return a, created == 1, dbErr(err, "upsert address")
}

func (t *writer) AdvanceCursor(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	_, err := t.q.ExecContext(ctx, `UPDATE chat_addresses SET cursor = ?, updated_at = ? WHERE session_id = ? AND cursor < ?`, seq, micros(now), sessionID, seq)
	return dbErr(err, "advance cursor")
}

const outboxCols = `id, session_id, seq, platform, kind, payload, state, attempts, parts_sent, message_ids, last_error, owner, lease_until, available_at, created_at, updated_at`

func scanOutbox(row interface{ Scan(...any) error }) (store.OutboxEntry, error) {
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

func (t *reader) outbox(ctx context.Context, q string, args ...any) ([]store.OutboxEntry, error) {
	return sqlrow.QueryAll(ctx, t.q, "list outbox", scanOutbox, q, args...)
}

func (t *writer) EnqueueOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	res, err := t.q.ExecContext(ctx, `INSERT INTO outbox (session_id, seq, platform, kind, payload, state, available_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT (session_id, seq) DO NOTHING`,
		e.SessionID, e.Seq, e.Platform, e.Kind, string(e.Payload), micros(e.AvailableAt), micros(e.Created), micros(e.Created))
	if err != nil {
		return false, dbErr(err, "enqueue outbox")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (t *reader) OutboxDue(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// The head of each session's queue (its lowest open seq), when that
	// head is pending and available: a session's rows go out in order.
	return t.outbox(ctx, `SELECT `+outboxCols+` FROM outbox o WHERE platform = ? AND state = 'pending' AND available_at <= ?
		AND seq = (SELECT min(seq) FROM outbox h WHERE h.platform = o.platform AND h.session_id = o.session_id AND h.state IN ('pending', 'sending'))
		ORDER BY available_at, id LIMIT ?`, platform, micros(now), limit)
}

func (t *reader) OutboxStuck(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return t.outbox(ctx, `SELECT `+outboxCols+` FROM outbox WHERE platform = ? AND state = 'sending' AND lease_until < ? ORDER BY id LIMIT ?`,
		platform, micros(now), limit)
}

func (t *reader) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"platform", f.Platform}, {"state", f.State}, {"session_id", f.SessionID}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	q := `SELECT ` + outboxCols + ` FROM outbox`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return t.outbox(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, f.Limit)...)
}

func (t *writer) ClaimOutbox(ctx context.Context, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	e, err := scanOutbox(t.q.QueryRowContext(ctx, `UPDATE outbox SET state = 'sending', owner = ?, lease_until = ?, updated_at = ?
		WHERE id = ? AND state = 'pending' RETURNING `+outboxCols, owner, micros(until), micros(now), id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, false, nil
	}
	return e, err == nil, dbErr(err, "claim outbox")
}

func (t *writer) UpdateOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	ids, _ := json.Marshal(e.MessageIDs)
	if e.MessageIDs == nil {
		ids = []byte("[]")
	}
	res, err := t.q.ExecContext(ctx, `UPDATE outbox SET state = ?, attempts = ?, parts_sent = ?, message_ids = ?, last_error = ?,
			owner = CASE WHEN ? = 'sending' THEN owner ELSE '' END, lease_until = ?, available_at = ?, updated_at = ?
		WHERE id = ? AND owner = ? AND state = 'sending'`,
		e.State, e.Attempts, e.PartsSent, string(ids), e.LastError, e.State, micros(e.LeaseUntil), micros(e.AvailableAt), micros(e.Updated), e.ID, e.Owner)
	if err != nil {
		return false, dbErr(err, "update outbox")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (t *writer) PutGateCard(ctx context.Context, c store.GateCard) error {
	_, err := t.q.ExecContext(ctx, `INSERT INTO gate_cards (gate_id, session_id, platform, chat_id, thread_id, message_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.GateID, c.SessionID, c.Platform, c.ChatID, c.ThreadID, c.MessageID, micros(c.Created))
	return dbErr(err, "put gate card")
}

func (t *reader) GateCards(ctx context.Context, gateID string) ([]store.GateCard, error) {
	return sqlrow.QueryAll(ctx, t.q, "gate cards", func(r rowScanner) (store.GateCard, error) {
		var c store.GateCard
		var created int64
		err := r.Scan(&c.GateID, &c.SessionID, &c.Platform, &c.ChatID, &c.ThreadID, &c.MessageID, &created)
		c.Created = fromMicros(created)
		return c, err
	}, `SELECT gate_id, session_id, platform, chat_id, thread_id, message_id, created_at FROM gate_cards WHERE gate_id = ? ORDER BY created_at`, gateID)
}

func (t *reader) GetPlatformLease(ctx context.Context, name string) (store.PlatformLease, bool, error) {
	var l store.PlatformLease
	var exp int64
	err := t.q.QueryRowContext(ctx, `SELECT name, owner, expires_at FROM platform_leases WHERE name = ?`, name).Scan(&l.Name, &l.Owner, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	l.ExpiresAt = fromMicros(exp)
	return l, err == nil, dbErr(err, "get platform lease")
}

func (t *writer) AcquirePlatformLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	res, err := t.q.ExecContext(ctx, `INSERT INTO platform_leases (name, owner, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE platform_leases.owner = excluded.owner OR platform_leases.expires_at < ?`, name, owner, micros(until), micros(now))
	if err != nil {
		return false, dbErr(err, "acquire platform lease")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (t *writer) ReleasePlatformLease(ctx context.Context, name, owner string) error {
	_, err := t.q.ExecContext(ctx, `DELETE FROM platform_leases WHERE name = ? AND owner = ?`, name, owner)
	return dbErr(err, "release platform lease")
}

// The gateway writes of several statements run on the Store in a
// transaction of their own: InsertReceive (the read of the first row after
// a conflict), UpsertAddress (insert, then read or touch) and PruneGateway
// (two deletes).

// InsertReceive implements store.Writer.
func (s *Store) InsertReceive(ctx context.Context, e store.ReceiveEntry) (out store.ReceiveEntry, ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, ok, err = t.InsertReceive(ctx, e); return err })
	return out, ok, err
}

// UpsertAddress implements store.Writer.
func (s *Store) UpsertAddress(ctx context.Context, e store.AddressEntry) (out store.AddressEntry, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, created, err = t.UpsertAddress(ctx, e); return err })
	return out, created, err
}

func (t *tx) TouchChat(ctx context.Context, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	a, err := scanAddress(t.q.QueryRowContext(ctx, touchChatSQL, e.ReplyTo, e.ReplyTo, e.UserID, e.UserID, micros(e.Updated), e.Platform, e.ChatID, e.ThreadID))
	if errors.Is(err, sql.ErrNoRows) {
		return a, false, 0, nil
	}
	if err != nil {
		return a, false, 0, dbErr(err, "touch chat")
	}
	n, err := t.CountHandedOn(ctx, e.Platform, e.ChatID, since)
	return a, true, n, err
}

func (t *tx) InsertReceiveAtCommit(ctx context.Context, e store.ReceiveEntry) error {
	insert := func(ctx context.Context) error {
		_, err := t.q.ExecContext(ctx, insertReceiveSQL, receiveArgs(e)...)
		if err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") {
			return gh.Wrap(gh.CodeConflict, err, "update %s of %s was received before", e.UpdateID, e.Platform)
		}
		return dbErr(err, "insert receive log")
	}
	t.atCommit = append(t.atCommit, insert)
	return nil
}

func (t *tx) PruneGateway(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	for _, q := range []string{
		`DELETE FROM receive_log WHERE id IN (SELECT id FROM receive_log WHERE received_at < ? ORDER BY id LIMIT ?)`,
		`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state IN ('sent', 'dead') AND updated_at < ? ORDER BY id LIMIT ?)`,
	} {
		res, err := t.q.ExecContext(ctx, q, micros(before), limit)
		if err != nil {
			return n, dbErr(err, "prune gateway rows")
		}
		m, _ := res.RowsAffected()
		n += int(m)
	}
	return n, nil
}

// PruneGateway implements store.Writer.
func (s *Store) PruneGateway(ctx context.Context, before time.Time, limit int) (n int, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { n, err = t.PruneGateway(ctx, before, limit); return err })
	return n, err
}

func (t *reader) CountOutbox(ctx context.Context, platform, state string) (int, error) {
	var n int
	err := t.q.QueryRowContext(ctx, `SELECT count(*) FROM outbox WHERE platform = ? AND state = ?`, platform, state).Scan(&n)
	return n, dbErr(err, "count outbox")
}
