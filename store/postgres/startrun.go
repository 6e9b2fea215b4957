package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// startRunSQL is store.StartRunParams in one statement: the CTEs all see
// the session row as it was before (old), which the claim holds locked.
const startRunSQL = `
WITH old AS (
	SELECT last_seq, last_input_seq, read_watermark, compaction_seq FROM sessions WHERE id = $1
), s AS (
	UPDATE sessions SET epoch = epoch + 1, last_seq = last_seq + 1,
		read_watermark = GREATEST(read_watermark, last_seq + 1), updated_at = $2
	WHERE id = $1
	RETURNING id, tenant, title, epoch, last_seq, created_at
), e AS (
	INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at)
	SELECT $1, s.last_seq, $3, $4::jsonb, $5::text || s.epoch::text, $2 FROM s
	RETURNING seq, payload, idem_key
), r AS (
	UPDATE runs SET state = 'running', attempts = $6, owner = $7, epoch = s.epoch, lease_expires_at = $8,
		read_watermark = s.last_seq, reason = $9, updated_at = $2, step = 'start', step_started_at = $2
	FROM s WHERE runs.id = $10
	RETURNING runs.id
)
SELECT s.id, s.tenant, s.title, old.last_seq, old.last_input_seq, old.read_watermark, old.compaction_seq, s.epoch, s.created_at,
	e.seq, e.payload, e.idem_key, (SELECT count(*) FROM r)
FROM s, old, e`

// StartRun implements store.Tx in one round trip.
func (t *tx) StartRun(ctx context.Context, p store.StartRunParams) (store.StartedRun, error) {
	var out store.StartedRun
	sess, ev := &out.Session, &out.Started
	var runs int64
	err := t.q.QueryRow(ctx, startRunSQL, p.Run.SessionID, p.Now, string(gh.KindRunStarted), string(p.Payload), p.KeyPrefix,
		p.Run.Attempts, p.Run.Owner, nullTime(p.Run.LeaseExpiresAt), p.Run.Reason, p.Run.ID).Scan(
		&sess.ID, &sess.Tenant, &sess.Title, &sess.LastSeq, &sess.LastInputSeq, &sess.ReadWatermark, &sess.CompactionSeq, &sess.Epoch, &sess.Created,
		&ev.Seq, (*[]byte)(&ev.Payload), &ev.Key, &runs)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", p.Run.SessionID)
	}
	if err != nil {
		return out, dbErr(err, "start run")
	}
	if runs != 1 {
		return out, gh.Errorf(gh.CodeNotFound, "no run %d", p.Run.ID)
	}
	sess.Created, sess.Updated = sess.Created.UTC(), p.Now.UTC()
	ev.SessionID, ev.Kind, ev.CreatedAt = p.Run.SessionID, gh.KindRunStarted, p.Now.UTC()
	t.relayed.add(*ev)
	return out, nil
}
