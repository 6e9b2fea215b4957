package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// The gateway's rows (see store/gateway.go). UpsertAddress's
// INSERT … ON CONFLICT DO UPDATE takes the address row's lock, which holds
// until the transaction ends: one chat's receives go one at a time.

const receiveCols = `id, platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at`

func scanReceive(row pgx.Row) (store.ReceiveEntry, error) {
	var e store.ReceiveEntry
	err := row.Scan(&e.ID, &e.Platform, &e.UpdateID, &e.ChatID, &e.ThreadID, &e.UserID, &e.UserName, &e.MessageID, &e.IsBot,
		&e.Text, &e.Outcome, &e.Reason, &e.Detail, &e.SessionID, &e.Seq, &e.ReceivedAt)
	e.ReceivedAt = e.ReceivedAt.UTC()
	return e, err
}

func (t *executor) receives(ctx context.Context, what, q string, args ...any) ([]store.ReceiveEntry, error) {
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ReceiveEntry, error) { return scanReceive(r) })
	return nilIfEmpty(out), dbErr(err, what)
}

func (t *executor) optionalReceive(ctx context.Context, what, q string, args ...any) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(t.q.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ReceiveEntry{}, false, nil
	}
	if err != nil {
		return store.ReceiveEntry{}, false, dbErr(err, what)
	}
	return e, true, nil
}

func (t *executor) ReceiveByUpdate(ctx context.Context, platform, updateID string) (store.ReceiveEntry, bool, error) {
	return t.optionalReceive(ctx, "find update", `SELECT `+receiveCols+` FROM receive_log WHERE platform = $1 AND update_id = $2 AND reason <> 'duplicate'`,
		platform, updateID)
}

// nilIfEmpty makes an empty list nil, as the SQLite store returns it.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// where builds a conjunction of equality conditions on the non-empty values,
// numbering parameters from 1.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, v any) {
	w.args = append(w.args, v)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

func (w *where) eq(col, v string) {
	if v != "" {
		w.add(col+" = ?", v)
	}
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func (w *where) limit() string { return " LIMIT $" + strconv.Itoa(len(w.args)+1) }

func (t *executor) ListReceive(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	var w where
	w.eq("platform", f.Platform)
	w.eq("outcome", f.Outcome)
	w.eq("reason", f.Reason)
	if f.Before > 0 {
		w.add("id < ?", f.Before)
	}
	return t.receives(ctx, "list receive log", `SELECT `+receiveCols+` FROM receive_log`+w.sql()+` ORDER BY id DESC`+w.limit(),
		append(w.args, f.Limit)...)
}

func (t *executor) LastReceive(ctx context.Context, platform string) (store.ReceiveEntry, bool, error) {
	return t.optionalReceive(ctx, "last receive", `SELECT `+receiveCols+` FROM receive_log WHERE platform = $1 ORDER BY id DESC LIMIT 1`, platform)
}

func (t *executor) CountHandedOn(ctx context.Context, platform, chatID string, since time.Time) (int, error) {
	var n int
	err := t.q.QueryRow(ctx, countHandedOnSQL, platform, chatID, since).Scan(&n)
	return n, dbErr(err, "count handed on")
}

// InsertReceive relies on receive_log_update, the partial unique index on
// (platform, update_id) of non-duplicate rows: ON CONFLICT DO NOTHING
// without a target covers it. A racing inserter of the same update waits
// for the first transaction, then does nothing and reads its row.
func (t *executor) InsertReceive(ctx context.Context, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	err := t.q.QueryRow(ctx, insertReceiveSQL+` ON CONFLICT DO NOTHING RETURNING id, received_at`, receiveArgs(e)...).Scan(&e.ID, &e.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		first, _, err := t.ReceiveByUpdate(ctx, e.Platform, e.UpdateID)
		return first, false, err
	}
	if err != nil {
		return store.ReceiveEntry{}, false, dbErr(err, "insert receive log")
	}
	e.ReceivedAt = e.ReceivedAt.UTC()
	return e, true, nil
}

const addressCols = `session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at`

func scanAddress(row pgx.Row, extra ...any) (store.AddressEntry, error) {
	var a store.AddressEntry
	err := row.Scan(append([]any{&a.SessionID, &a.Platform, &a.ChatID, &a.ThreadID, &a.ChatType, &a.ReplyTo, &a.UserID, &a.Cursor,
		&a.Created, &a.Updated}, extra...)...)
	a.Created, a.Updated = a.Created.UTC(), a.Updated.UTC()
	return a, err
}

func (t *executor) AddressBySession(ctx context.Context, sessionID string) (store.AddressEntry, bool, error) {
	a, err := scanAddress(t.q.QueryRow(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE session_id = $1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AddressEntry{}, false, nil
	}
	if err != nil {
		return store.AddressEntry{}, false, dbErr(err, "get address")
	}
	return a, true, nil
}

func (t *executor) AddressesBehind(ctx context.Context, limit int) ([]store.AddressEntry, error) {
	rows, err := t.q.Query(ctx, `SELECT `+strings.ReplaceAll("a."+addressCols, ", ", ", a.")+`
		FROM chat_addresses a JOIN sessions s ON s.id = a.session_id WHERE s.last_seq > a.cursor ORDER BY s.updated_at LIMIT $1`, limit)
	if err != nil {
		return nil, dbErr(err, "addresses behind")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AddressEntry, error) { return scanAddress(r) })
	return nilIfEmpty(out), dbErr(err, "addresses behind")
}

// UpsertAddress updates the chat's row, which locks it until the
// transaction ends; only a chat seen for the first time needs the insert.
// The insert skips a conflict on any unique index (a concurrent first
// message of the same chat commits first, and ON CONFLICT with one target
// would still fail on the other index), and then the update runs again.
func (t *executor) UpsertAddress(ctx context.Context, e store.AddressEntry) (store.AddressEntry, bool, error) {
	update := func() (store.AddressEntry, bool, error) {
		return t.touch(ctx, t.q.QueryRow(ctx, touchChatSQL, e.ReplyTo, e.UserID, e.Updated, e.Platform, e.ChatID, e.ThreadID))
	}
	if a, ok, err := update(); err != nil || ok {
		return a, false, err
	}
	a, err := scanAddress(t.q.QueryRow(ctx, `INSERT INTO chat_addresses (session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8) ON CONFLICT DO NOTHING RETURNING `+addressCols,
		e.SessionID, e.Platform, e.ChatID, e.ThreadID, e.ChatType, e.ReplyTo, e.UserID, e.Updated))
	if err == nil {
		return a, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return a, false, dbErr(err, "insert address")
	}
	a, ok, err := update()
	if err == nil && !ok {
		err = gh.Errorf(gh.CodeConflict, "address of %s chat %s: a session %s exists for another chat", e.Platform, e.ChatID, e.SessionID)
	}
	return a, false, err
}

func (t *executor) AdvanceCursor(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	_, err := t.q.Exec(ctx, `UPDATE chat_addresses SET cursor = $1, updated_at = $2 WHERE session_id = $3 AND cursor < $1`, seq, now, sessionID)
	return dbErr(err, "advance cursor")
}

const outboxCols = `id, session_id, seq, platform, kind, payload, state, attempts, parts_sent, message_ids, last_error, owner, lease_until, available_at, created_at, updated_at`

func scanOutbox(row pgx.Row) (store.OutboxEntry, error) {
	var e store.OutboxEntry
	var payload, ids []byte
	var lease *time.Time
	err := row.Scan(&e.ID, &e.SessionID, &e.Seq, &e.Platform, &e.Kind, &payload, &e.State, &e.Attempts, &e.PartsSent, &ids, &e.LastError,
		&e.Owner, &lease, &e.AvailableAt, &e.Created, &e.Updated)
	if err != nil {
		return store.OutboxEntry{}, err
	}
	e.Payload = json.RawMessage(payload)
	_ = json.Unmarshal(ids, &e.MessageIDs)
	if lease != nil {
		e.LeaseUntil = lease.UTC()
	}
	e.AvailableAt, e.Created, e.Updated = e.AvailableAt.UTC(), e.Created.UTC(), e.Updated.UTC()
	return e, nil
}

func (t *executor) outbox(ctx context.Context, what, q string, args ...any) ([]store.OutboxEntry, error) {
	rows, err := t.q.Query(ctx, q, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.OutboxEntry, error) { return scanOutbox(r) })
	return nilIfEmpty(out), dbErr(err, what)
}

func (t *executor) EnqueueOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	payload := string(e.Payload)
	if payload == "" {
		payload = "null" // the column is JSONB: no payload is JSON null
	}
	tag, err := t.q.Exec(ctx, `INSERT INTO outbox (session_id, seq, platform, kind, payload, state, available_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, 'pending', $6, $7, $7) ON CONFLICT (session_id, seq) DO NOTHING`,
		e.SessionID, e.Seq, e.Platform, e.Kind, payload, e.AvailableAt, e.Created)
	if err != nil {
		return false, dbErr(err, "enqueue outbox")
	}
	return tag.RowsAffected() == 1, nil
}

func (t *executor) OutboxDue(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// The head of each session's queue (its lowest open seq), when that
	// head is pending and available: a session's rows go out in order.
	return t.outbox(ctx, "outbox due", `SELECT `+outboxCols+` FROM outbox o WHERE platform = $1 AND state = 'pending' AND available_at <= $2
		AND seq = (SELECT min(seq) FROM outbox h WHERE h.platform = o.platform AND h.session_id = o.session_id AND h.state IN ('pending', 'sending'))
		ORDER BY available_at, id LIMIT $3`, platform, now, limit)
}

func (t *executor) OutboxStuck(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// A sending row without a lease counts as expired, as SQLite's 0 does.
	return t.outbox(ctx, "outbox stuck", `SELECT `+outboxCols+` FROM outbox WHERE platform = $1 AND state = 'sending' AND (lease_until IS NULL OR lease_until < $2)
		ORDER BY id LIMIT $3`, platform, now, limit)
}

func (t *executor) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	var w where
	w.eq("platform", f.Platform)
	w.eq("state", f.State)
	w.eq("session_id", f.SessionID)
	return t.outbox(ctx, "list outbox", `SELECT `+outboxCols+` FROM outbox`+w.sql()+` ORDER BY id DESC`+w.limit(), append(w.args, f.Limit)...)
}

// ClaimOutbox is a compare-and-set: a concurrent claimer waits for the
// first one's row lock, finds the row no longer pending and gets nothing.
func (t *executor) ClaimOutbox(ctx context.Context, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	e, err := scanOutbox(t.q.QueryRow(ctx, `UPDATE outbox SET state = 'sending', owner = $1, lease_until = $2, updated_at = $3
		WHERE id = $4 AND state = 'pending' RETURNING `+outboxCols, owner, nullTime(until), now, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.OutboxEntry{}, false, nil
	}
	if err != nil {
		return store.OutboxEntry{}, false, dbErr(err, "claim outbox")
	}
	return e, true, nil
}

func (t *executor) UpdateOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	ids, _ := json.Marshal(e.MessageIDs)
	if e.MessageIDs == nil {
		ids = []byte("[]")
	}
	tag, err := t.q.Exec(ctx, `UPDATE outbox SET state = $1, attempts = $2, parts_sent = $3, message_ids = $4::jsonb, last_error = $5,
			owner = CASE WHEN $1 = 'sending' THEN owner ELSE '' END, lease_until = $6, available_at = $7, updated_at = $8
		WHERE id = $9 AND owner = $10 AND state = 'sending'`,
		e.State, e.Attempts, e.PartsSent, string(ids), e.LastError, nullTime(e.LeaseUntil), e.AvailableAt, e.Updated, e.ID, e.Owner)
	if err != nil {
		return false, dbErr(err, "update outbox")
	}
	return tag.RowsAffected() == 1, nil
}

func (t *executor) PutGateCard(ctx context.Context, c store.GateCard) error {
	_, err := t.q.Exec(ctx, `INSERT INTO gate_cards (gate_id, session_id, platform, chat_id, thread_id, message_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, c.GateID, c.SessionID, c.Platform, c.ChatID, c.ThreadID, c.MessageID, c.Created)
	return dbErr(err, "put gate card")
}

func (t *executor) GateCards(ctx context.Context, gateID string) ([]store.GateCard, error) {
	rows, err := t.q.Query(ctx, `SELECT gate_id, session_id, platform, chat_id, thread_id, message_id, created_at FROM gate_cards WHERE gate_id = $1 ORDER BY created_at`, gateID)
	if err != nil {
		return nil, dbErr(err, "gate cards")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.GateCard, error) {
		var c store.GateCard
		err := r.Scan(&c.GateID, &c.SessionID, &c.Platform, &c.ChatID, &c.ThreadID, &c.MessageID, &c.Created)
		c.Created = c.Created.UTC()
		return c, err
	})
	return nilIfEmpty(out), dbErr(err, "gate cards")
}

func (t *executor) GetPlatformLease(ctx context.Context, name string) (store.PlatformLease, bool, error) {
	var l store.PlatformLease
	err := t.q.QueryRow(ctx, `SELECT name, owner, expires_at FROM platform_leases WHERE name = $1`, name).Scan(&l.Name, &l.Owner, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.PlatformLease{}, false, nil
	}
	if err != nil {
		return store.PlatformLease{}, false, dbErr(err, "get platform lease")
	}
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, true, nil
}

func (t *executor) AcquirePlatformLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	tag, err := t.q.Exec(ctx, `INSERT INTO platform_leases (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
		WHERE platform_leases.owner = EXCLUDED.owner OR platform_leases.expires_at < $4`, name, owner, until, now)
	if err != nil {
		return false, dbErr(err, "acquire platform lease")
	}
	return tag.RowsAffected() == 1, nil
}

func (t *executor) ReleasePlatformLease(ctx context.Context, name, owner string) error {
	_, err := t.q.Exec(ctx, `DELETE FROM platform_leases WHERE name = $1 AND owner = $2`, name, owner)
	return dbErr(err, "release platform lease")
}

// On the Store (the executor on the pool) each gateway write is one
// statement, its own transaction, except InsertReceive's read of the first
// row after a conflict, which needs no atomicity with the insert that did
// nothing, and UpsertAddress, whose row lock outside a transaction lasts
// only for the statement.

const touchChatSQL = `UPDATE chat_addresses SET
		reply_to = CASE WHEN $1 = '' THEN reply_to ELSE $1 END,
		user_id = CASE WHEN $2 = '' THEN user_id ELSE $2 END,
		updated_at = $3
	WHERE platform = $4 AND chat_id = $5 AND thread_id = $6 RETURNING ` + addressCols

const countHandedOnSQL = `SELECT count(*) FROM receive_log WHERE platform = $1 AND chat_id = $2 AND received_at >= $3 AND outcome = 'handed_on'`

// TouchChat (a Tx method: t.conn is set) sends the update and the count in one pipeline: the count runs
// after the update took the row's lock, with its own snapshot (read
// committed), so it sees every receive of the chat committed before.
func (t *tx) TouchChat(ctx context.Context, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	b := &pgx.Batch{}
	b.Queue(touchChatSQL, e.ReplyTo, e.UserID, e.Updated, e.Platform, e.ChatID, e.ThreadID)
	b.Queue(countHandedOnSQL, e.Platform, e.ChatID, since)
	br, err := t.conn.Batch(ctx, b)
	if err != nil {
		return store.AddressEntry{}, false, 0, dbErr(err, "touch chat")
	}
	defer br.Close()
	a, ok, err := t.touch(ctx, br.QueryRow())
	if err != nil {
		return a, false, 0, err
	}
	var n int
	if err := br.QueryRow().Scan(&n); err != nil {
		return a, false, 0, dbErr(err, "count handed on")
	}
	return a, ok, n, nil
}

func (t *executor) touch(_ context.Context, row pgx.Row) (store.AddressEntry, bool, error) {
	a, err := scanAddress(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, dbErr(err, "touch chat")
}

const insertReceiveSQL = `INSERT INTO receive_log (platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

func receiveArgs(e store.ReceiveEntry) []any {
	return []any{e.Platform, e.UpdateID, e.ChatID, e.ThreadID, e.UserID, e.UserName, e.MessageID, e.IsBot, e.Text, e.Outcome, e.Reason, e.Detail,
		e.SessionID, e.Seq, e.ReceivedAt}
}

// InsertReceiveAtCommit defers the insert to the COMMIT's pipeline.
func (t *tx) InsertReceiveAtCommit(ctx context.Context, e store.ReceiveEntry) error {
	t.conn.AtCommit(insertReceiveSQL, receiveArgs(e)...)
	return nil
}

func (t *executor) PruneGateway(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	for _, q := range []string{
		`DELETE FROM receive_log WHERE id IN (SELECT id FROM receive_log WHERE received_at < $1 ORDER BY id LIMIT $2)`,
		`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state IN ('sent', 'dead') AND updated_at < $1 ORDER BY id LIMIT $2)`,
	} {
		tag, err := t.q.Exec(ctx, q, before, limit)
		if err != nil {
			return n, dbErr(err, "prune gateway rows")
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

func (t *executor) CountOutbox(ctx context.Context, platform, state string) (int, error) {
	var n int
	err := t.q.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE platform = $1 AND state = $2`, platform, state).Scan(&n)
	return n, dbErr(err, "count outbox")
}
