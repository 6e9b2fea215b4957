-- +goose Up
-- What a running attempt is doing and since when, written by its lease
-- renewals (gh.Run.Step): a step that does not change is a stuck turn.
ALTER TABLE runs ADD COLUMN step TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN step_started_at INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN step_started_at;
ALTER TABLE runs DROP COLUMN step;
