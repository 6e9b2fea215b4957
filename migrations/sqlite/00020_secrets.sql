-- +goose Up
-- Secrets the gateway makes for itself, such as the API token generated at
-- the first start when none is configured: kept in the database so every
-- replica on it answers the same one and a restart keeps it.
CREATE TABLE gateway_secrets (
	name TEXT PRIMARY KEY,
	value TEXT NOT NULL,
	created_at INTEGER NOT NULL
);

-- +goose Down
DROP TABLE gateway_secrets;
