-- +goose Up
-- A run awaiting approval no longer holds its session (#30): at most one
-- run per session is queued or running — the session lock — and any
-- number may wait for a person, so a message typed under a pending card
-- is answered by a turn of its own at once.
DROP INDEX runs_one_active;
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE state IN ('queued', 'running');
CREATE INDEX runs_waiting ON runs (session_id, id) WHERE state = 'awaiting_approval';
-- resume_requested: a decision came for the run's gate while the session
-- was busy (or while the run itself still ran): the run resumes as soon
-- as the session's running run settles.
ALTER TABLE runs ADD COLUMN resume_requested INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN resume_requested;
DROP INDEX runs_waiting;
DROP INDEX runs_one_active;
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE state IN ('queued', 'running', 'awaiting_approval');
