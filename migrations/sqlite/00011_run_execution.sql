-- +goose Up
-- A run's resolved execution identity (provider, model, selection,
-- thinking level, tools offered), JSON, for audit (gh.Execution).
ALTER TABLE runs ADD COLUMN execution TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN execution;
