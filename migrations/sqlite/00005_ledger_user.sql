-- +goose Up
ALTER TABLE ledger ADD COLUMN user_key TEXT NOT NULL DEFAULT '';
CREATE INDEX ledger_user_time ON ledger (user_key, created_at);
CREATE INDEX ledger_time ON ledger (created_at);

-- +goose Down
DROP INDEX ledger_time;
DROP INDEX ledger_user_time;
ALTER TABLE ledger DROP COLUMN user_key;
