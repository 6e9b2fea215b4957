package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pgrelay"
)

// claimStartSQL is store.Store.ClaimStart in one statement: the candidate
// (claimCandidateSQL's, locked for the statement), and unless it is a
// takeover with no attempts left, its start (store.StartedRun) with its
// run.started built here (gh.RunStarted's fields; the takeover reason is
// store.TakeoverReason's), relayed to other replicas' streams as
// queueSQL relays an input. The CTEs all see the
// rows as they were before the statement; the locks make that the truth.
var claimStartSQL = `
WITH c AS (` + claimCandidateSQL + `
), go AS (
	SELECT c.id, c.session_id, c.attempts + 1 AS attempt, c.state = 'running' AS took_over,
		CASE WHEN c.state = 'running' AND c.reason = '' THEN 'attempt ' || c.attempts || ' lost its lease' ELSE c.reason END AS why
	FROM c WHERE NOT (c.state = 'running' AND c.attempts >= c.max_attempts)
), old AS (
	SELECT s.last_seq, s.last_input_seq, s.read_watermark, s.compaction_seq FROM sessions s, go WHERE s.id = go.session_id
), s AS (
	UPDATE sessions SET epoch = epoch + 1, last_seq = last_seq + 1,
		read_watermark = GREATEST(read_watermark, last_seq + 1), updated_at = $1
	FROM go WHERE sessions.id = go.session_id
	RETURNING sessions.id, sessions.tenant, sessions.title, sessions.epoch, sessions.last_seq, sessions.created_at
), e AS (
	INSERT INTO events (session_id, seq, kind, payload, idem_key, created_at)
	SELECT s.id, s.last_seq, 'run.started', jsonb_strip_nulls(jsonb_build_object('runId', go.id, 'attempt', go.attempt,
		'tookOver', CASE WHEN go.took_over THEN true END, 'reason', NULLIF(go.why, ''))), $4::text || s.epoch::text, $1
	FROM s, go
	RETURNING seq, payload, idem_key
), r AS (
	UPDATE runs SET state = 'running', attempts = go.attempt, owner = $2, epoch = s.epoch, lease_expires_at = $3,
		read_watermark = s.last_seq, reason = go.why, updated_at = $1, step = 'start', step_started_at = $1
	FROM go, s WHERE runs.id = go.id
	RETURNING runs.id
), rn AS (
	` + pgrelay.NotifyOneSQL("$5", "$6::text", "s.id", "e.seq", "'run.started'", "e.payload", "e.idem_key", "$1::timestamptz", "s, e") + `
)
SELECT ` + qualify("c.", runCols) + `, c.more, go.id IS NOT NULL, (SELECT count(*) FROM r), (SELECT count(*) FROM rn),
	COALESCE(s.tenant, ''), COALESCE(s.title, ''), COALESCE(old.last_seq, 0), COALESCE(old.last_input_seq, 0), COALESCE(old.read_watermark, 0),
	COALESCE(old.compaction_seq, 0), COALESCE(s.epoch, 0), COALESCE(s.created_at, $1), COALESCE(e.seq, 0), COALESCE(e.payload, '{}'::jsonb), COALESCE(e.idem_key, ''),
	COALESCE(go.why, '')
FROM c LEFT JOIN go ON true LEFT JOIN old ON true LEFT JOIN s ON true LEFT JOIN e ON true`

// ClaimStart implements store.Store in one statement, one round trip.
func (s *Store) ClaimStart(ctx context.Context, p store.ClaimStartParams) (store.ClaimStarted, error) {
	var out store.ClaimStarted
	var started bool
	var runs, relayed int64
	var why string
	sess, ev := &out.Session, &out.Started
	run, err := scanRun(s.pool.QueryRow(ctx, claimStartSQL, p.Now, p.Owner, nullTime(p.LeaseExpiresAt), p.KeyPrefix, s.events, s.self),
		&out.More, &started, &runs, &relayed,
		&sess.Tenant, &sess.Title, &sess.LastSeq, &sess.LastInputSeq, &sess.ReadWatermark, &sess.CompactionSeq, &sess.Epoch, &sess.Created,
		&ev.Seq, (*[]byte)(&ev.Payload), &ev.Key, &why)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, dbErr(err, "claim")
	}
	out.Found, out.TookOver, out.Run = true, run.State == gh.RunRunning, run
	if !started {
		out.Exhausted = true
		return out, nil
	}
	if runs != 1 || ev.Seq == 0 {
		return store.ClaimStarted{}, gh.Errorf(gh.CodeInternal, "postgres: claim of run %d did not start it", run.ID)
	}
	sess.ID, sess.Created, sess.Updated = run.SessionID, sess.Created.UTC(), p.Now.UTC()
	ev.SessionID, ev.Kind, ev.CreatedAt = run.SessionID, gh.KindRunStarted, p.Now.UTC()
	run.State, run.Owner, run.Epoch, run.Attempts = gh.RunRunning, p.Owner, sess.Epoch, run.Attempts+1
	run.LeaseExpiresAt, run.ReadWatermark, run.Reason, run.Updated = p.LeaseExpiresAt, ev.Seq, why, p.Now
	run.Step, run.StepStarted = "start", p.Now
	out.Run = run
	return out, nil
}
