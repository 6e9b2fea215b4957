package pggateway

import (
	"context"
	"encoding/json"
	"errors"
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

func optionalReceive(ctx context.Context, q Querier, what, query string, args ...any) (store.ReceiveEntry, bool, error) {
	e, err := scanReceive(q.QueryRow(ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ReceiveEntry{}, false, nil
	}
	if err != nil {
		return store.ReceiveEntry{}, false, dbErr(err, what)
	}
	return e, true, nil
}

// ReceiveByUpdate returns the first (non-duplicate) row of an update.
func ReceiveByUpdate(ctx context.Context, q Querier, platform, updateID string) (store.ReceiveEntry, bool, error) {
	return optionalReceive(ctx, q, "find update", `SELECT `+receiveCols+` FROM receive_log WHERE platform = $1 AND update_id = $2 AND reason <> 'duplicate'`,
		platform, updateID)
}

// ListReceive lists the receive log under a filter, newest first.
func ListReceive(ctx context.Context, q Querier, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	var w where
	w.eq("platform", f.Platform)
	w.eq("outcome", f.Outcome)
	w.eq("reason", f.Reason)
	if f.Before > 0 {
		w.add("id < ?", f.Before)
	}
	return collect(ctx, q, "list receive log", scanReceive, `SELECT `+receiveCols+` FROM receive_log`+w.sql()+` ORDER BY id DESC`+w.limit(),
		append(w.args, f.Limit)...)
}

// LastReceive returns the newest row of a platform.
func LastReceive(ctx context.Context, q Querier, platform string) (store.ReceiveEntry, bool, error) {
	return optionalReceive(ctx, q, "last receive", `SELECT `+receiveCols+` FROM receive_log WHERE platform = $1 ORDER BY id DESC LIMIT 1`, platform)
}

const countHandedOnSQL = `SELECT count(*) FROM receive_log WHERE platform = $1 AND chat_id = $2 AND received_at >= $3 AND outcome = 'handed_on'`

// CountHandedOn counts a chat's updates handed on at or after since.
func CountHandedOn(ctx context.Context, q Querier, platform, chatID string, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, countHandedOnSQL, platform, chatID, since).Scan(&n)
	return n, dbErr(err, "count handed on")
}

const insertReceiveSQL = `INSERT INTO receive_log (platform, update_id, chat_id, thread_id, user_id, user_name, message_id, is_bot, text, outcome, reason, detail, session_id, seq, received_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`

func receiveArgs(e store.ReceiveEntry) []any {
	return []any{e.Platform, e.UpdateID, e.ChatID, e.ThreadID, e.UserID, e.UserName, e.MessageID, e.IsBot, e.Text, e.Outcome, e.Reason, e.Detail,
		e.SessionID, e.Seq, e.ReceivedAt}
}

// InsertReceive relies on receive_log_update, the partial unique index on
// (platform, update_id) of non-duplicate rows: ON CONFLICT DO NOTHING
// without a target covers it. A racing inserter of the same update waits
// for the first transaction, then does nothing and reads its row.
func InsertReceive(ctx context.Context, q Querier, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	err := q.QueryRow(ctx, insertReceiveSQL+` ON CONFLICT DO NOTHING RETURNING id, received_at`, receiveArgs(e)...).Scan(&e.ID, &e.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		first, _, err := ReceiveByUpdate(ctx, q, e.Platform, e.UpdateID)
		return first, false, err
	}
	if err != nil {
		return store.ReceiveEntry{}, false, dbErr(err, "insert receive log")
	}
	e.ReceivedAt = e.ReceivedAt.UTC()
	return e, true, nil
}

// InsertReceiveAtCommit defers the insert to the COMMIT's pipeline.
func InsertReceiveAtCommit(conn AtCommitter, e store.ReceiveEntry) {
	conn.AtCommit(insertReceiveSQL, receiveArgs(e)...)
}

const addressCols = `session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at`

func scanAddress(row pgx.Row) (store.AddressEntry, error) {
	var a store.AddressEntry
	err := row.Scan(&a.SessionID, &a.Platform, &a.ChatID, &a.ThreadID, &a.ChatType, &a.ReplyTo, &a.UserID, &a.Cursor, &a.Created, &a.Updated)
	a.Created, a.Updated = a.Created.UTC(), a.Updated.UTC()
	return a, err
}

// AddressBySession returns a session's chat address, if it has one.
func AddressBySession(ctx context.Context, q Querier, sessionID string) (store.AddressEntry, bool, error) {
	a, err := scanAddress(q.QueryRow(ctx, `SELECT `+addressCols+` FROM chat_addresses WHERE session_id = $1`, sessionID))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.AddressEntry{}, false, nil
	}
	if err != nil {
		return store.AddressEntry{}, false, dbErr(err, "get address")
	}
	return a, true, nil
}

// AddressesBehind lists sessions whose log has grown past their cursor.
func AddressesBehind(ctx context.Context, q Querier, limit int) ([]store.AddressEntry, error) {
	return collect(ctx, q, "addresses behind", scanAddress, `SELECT `+strings.ReplaceAll("a."+addressCols, ", ", ", a.")+`
		FROM chat_addresses a JOIN sessions s ON s.id = a.session_id WHERE s.last_seq > a.cursor ORDER BY s.updated_at LIMIT $1`, limit)
}

const touchChatSQL = `UPDATE chat_addresses SET
		reply_to = CASE WHEN $1 = '' THEN reply_to ELSE $1 END,
		user_id = CASE WHEN $2 = '' THEN user_id ELSE $2 END,
		updated_at = $3
	WHERE platform = $4 AND chat_id = $5 AND thread_id = $6 RETURNING ` + addressCols

// touch reads the row touchChatSQL returned; false when the chat has none.
func touch(row pgx.Row) (store.AddressEntry, bool, error) {
	a, err := scanAddress(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, dbErr(err, "touch chat")
}

// UpsertAddress updates the chat's row, which locks it until the
// transaction ends; only a chat seen for the first time needs the insert.
// The insert skips a conflict on any unique index (a concurrent first
// message of the same chat commits first, and ON CONFLICT with one target
// would still fail on the other index), and then the update runs again.
func UpsertAddress(ctx context.Context, q Querier, e store.AddressEntry) (store.AddressEntry, bool, error) {
	update := func() (store.AddressEntry, bool, error) {
		return touch(q.QueryRow(ctx, touchChatSQL, e.ReplyTo, e.UserID, e.Updated, e.Platform, e.ChatID, e.ThreadID))
	}
	if a, ok, err := update(); err != nil || ok {
		return a, false, err
	}
	a, err := scanAddress(q.QueryRow(ctx, `INSERT INTO chat_addresses (session_id, platform, chat_id, thread_id, chat_type, reply_to, user_id, cursor, created_at, updated_at)
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

// TouchChat sends the update and the count in one pipeline on the
// transaction's connection: the count runs after the update took the
// row's lock, with its own snapshot (read committed), so it sees every
// receive of the chat committed before.
func TouchChat(ctx context.Context, conn Batcher, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	b := &pgx.Batch{}
	b.Queue(touchChatSQL, e.ReplyTo, e.UserID, e.Updated, e.Platform, e.ChatID, e.ThreadID)
	b.Queue(countHandedOnSQL, e.Platform, e.ChatID, since)
	br, err := conn.Batch(ctx, b)
	if err != nil {
		return store.AddressEntry{}, false, 0, dbErr(err, "touch chat")
	}
	defer br.Close()
	a, ok, err := touch(br.QueryRow())
	if err != nil {
		return a, false, 0, err
	}
	var n int
	if err := br.QueryRow().Scan(&n); err != nil {
		return a, false, 0, dbErr(err, "count handed on")
	}
	return a, ok, n, nil
}

// AdvanceCursor moves a session's cursor up to seq (never down).
func AdvanceCursor(ctx context.Context, q Querier, sessionID string, seq int64, now time.Time) error {
	_, err := q.Exec(ctx, `UPDATE chat_addresses SET cursor = $1, updated_at = $2 WHERE session_id = $3 AND cursor < $1`, seq, now, sessionID)
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

// EnqueueOutbox adds a row unless (session, seq) has one.
func EnqueueOutbox(ctx context.Context, q Querier, e store.OutboxEntry) (bool, error) {
	payload := string(e.Payload)
	if payload == "" {
		payload = "null" // the column is JSONB: no payload is JSON null
	}
	tag, err := q.Exec(ctx, `INSERT INTO outbox (session_id, seq, platform, kind, payload, state, available_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5::jsonb, 'pending', $6, $7, $7) ON CONFLICT (session_id, seq) DO NOTHING`,
		e.SessionID, e.Seq, e.Platform, e.Kind, payload, e.AvailableAt, e.Created)
	if err != nil {
		return false, dbErr(err, "enqueue outbox")
	}
	return tag.RowsAffected() == 1, nil
}

// OutboxDue lists a platform's sendable rows.
func OutboxDue(ctx context.Context, q Querier, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// The head of each session's queue (its lowest open seq), when that
	// head is pending and available: a session's rows go out in order.
	return collect(ctx, q, "outbox due", scanOutbox, `SELECT `+outboxCols+` FROM outbox o WHERE platform = $1 AND state = 'pending' AND available_at <= $2
		AND seq = (SELECT min(seq) FROM outbox h WHERE h.platform = o.platform AND h.session_id = o.session_id AND h.state IN ('pending', 'sending'))
		ORDER BY available_at, id LIMIT $3`, platform, now, limit)
}

// OutboxStuck lists a platform's rows left sending past their lease.
func OutboxStuck(ctx context.Context, q Querier, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	// A sending row without a lease counts as expired, as SQLite's 0 does.
	return collect(ctx, q, "outbox stuck", scanOutbox, `SELECT `+outboxCols+` FROM outbox WHERE platform = $1 AND state = 'sending' AND (lease_until IS NULL OR lease_until < $2)
		ORDER BY id LIMIT $3`, platform, now, limit)
}

// ListOutbox lists the outbox under a filter, newest first.
func ListOutbox(ctx context.Context, q Querier, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	var w where
	w.eq("platform", f.Platform)
	w.eq("state", f.State)
	w.eq("session_id", f.SessionID)
	return collect(ctx, q, "list outbox", scanOutbox, `SELECT `+outboxCols+` FROM outbox`+w.sql()+` ORDER BY id DESC`+w.limit(), append(w.args, f.Limit)...)
}

// ClaimOutbox is a compare-and-set: a concurrent claimer waits for the
// first one's row lock, finds the row no longer pending and gets nothing.
func ClaimOutbox(ctx context.Context, q Querier, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	e, err := scanOutbox(q.QueryRow(ctx, `UPDATE outbox SET state = 'sending', owner = $1, lease_until = $2, updated_at = $3
		WHERE id = $4 AND state = 'pending' RETURNING `+outboxCols, owner, nullTime(until), now, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.OutboxEntry{}, false, nil
	}
	if err != nil {
		return store.OutboxEntry{}, false, dbErr(err, "claim outbox")
	}
	return e, true, nil
}

// UpdateOutbox writes a claimed row's outcome, if e.Owner holds it.
func UpdateOutbox(ctx context.Context, q Querier, e store.OutboxEntry) (bool, error) {
	ids, _ := json.Marshal(e.MessageIDs)
	if e.MessageIDs == nil {
		ids = []byte("[]")
	}
	tag, err := q.Exec(ctx, `UPDATE outbox SET state = $1, attempts = $2, parts_sent = $3, message_ids = $4::jsonb, last_error = $5,
			owner = CASE WHEN $1 = 'sending' THEN owner ELSE '' END, lease_until = $6, available_at = $7, updated_at = $8
		WHERE id = $9 AND owner = $10 AND state = 'sending'`,
		e.State, e.Attempts, e.PartsSent, string(ids), e.LastError, nullTime(e.LeaseUntil), e.AvailableAt, e.Updated, e.ID, e.Owner)
	if err != nil {
		return false, dbErr(err, "update outbox")
	}
	return tag.RowsAffected() == 1, nil
}

// CountOutbox counts a platform's rows in a state.
func CountOutbox(ctx context.Context, q Querier, platform, state string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE platform = $1 AND state = $2`, platform, state).Scan(&n)
	return n, dbErr(err, "count outbox")
}

// PutGateCard records a gate's card, once.
func PutGateCard(ctx context.Context, q Querier, c store.GateCard) error {
	_, err := q.Exec(ctx, `INSERT INTO gate_cards (gate_id, session_id, platform, chat_id, thread_id, message_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`, c.GateID, c.SessionID, c.Platform, c.ChatID, c.ThreadID, c.MessageID, c.Created)
	return dbErr(err, "put gate card")
}

// GateCards lists a gate's cards, oldest first.
func GateCards(ctx context.Context, q Querier, gateID string) ([]store.GateCard, error) {
	return collect(ctx, q, "gate cards", func(r pgx.Row) (store.GateCard, error) {
		var c store.GateCard
		err := r.Scan(&c.GateID, &c.SessionID, &c.Platform, &c.ChatID, &c.ThreadID, &c.MessageID, &c.Created)
		c.Created = c.Created.UTC()
		return c, err
	}, `SELECT gate_id, session_id, platform, chat_id, thread_id, message_id, created_at FROM gate_cards WHERE gate_id = $1 ORDER BY created_at`, gateID)
}

// GetPlatformLease returns the lease called name, if it is held.
func GetPlatformLease(ctx context.Context, q Querier, name string) (store.PlatformLease, bool, error) {
	var l store.PlatformLease
	err := q.QueryRow(ctx, `SELECT name, owner, expires_at FROM platform_leases WHERE name = $1`, name).Scan(&l.Name, &l.Owner, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.PlatformLease{}, false, nil
	}
	if err != nil {
		return store.PlatformLease{}, false, dbErr(err, "get platform lease")
	}
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l, true, nil
}

// AcquirePlatformLease takes or renews the lease called name for owner.
func AcquirePlatformLease(ctx context.Context, q Querier, name, owner string, now, until time.Time) (bool, error) {
	tag, err := q.Exec(ctx, `INSERT INTO platform_leases (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
		WHERE platform_leases.owner = EXCLUDED.owner OR platform_leases.expires_at < $4`, name, owner, until, now)
	if err != nil {
		return false, dbErr(err, "acquire platform lease")
	}
	return tag.RowsAffected() == 1, nil
}

// ReleasePlatformLease gives the lease up, if owner holds it.
func ReleasePlatformLease(ctx context.Context, q Querier, name, owner string) error {
	_, err := q.Exec(ctx, `DELETE FROM platform_leases WHERE name = $1 AND owner = $2`, name, owner)
	return dbErr(err, "release platform lease")
}

// Prune deletes old receive-log rows and sent or dead outbox rows, at
// most limit of each.
func Prune(ctx context.Context, q Querier, before time.Time, limit int) (int, error) {
	n := 0
	for _, query := range []string{
		`DELETE FROM receive_log WHERE id IN (SELECT id FROM receive_log WHERE received_at < $1 ORDER BY id LIMIT $2)`,
		`DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state IN ('sent', 'dead') AND updated_at < $1 ORDER BY id LIMIT $2)`,
	} {
		tag, err := q.Exec(ctx, query, before, limit)
		if err != nil {
			return n, dbErr(err, "prune gateway rows")
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}
