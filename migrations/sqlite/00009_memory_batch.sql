-- +goose Up
-- The memory model pass claims the due jobs of one (user, session) at a
-- time, in batches: the pending jobs grouped that way, with what the
-- claim asks of them (due, newest).
CREATE INDEX memory_jobs_pending ON memory_jobs (user_key, session_id, id, available_at, created_at)
    WHERE state IN ('queued', 'running');

-- +goose Down
DROP INDEX memory_jobs_pending;
