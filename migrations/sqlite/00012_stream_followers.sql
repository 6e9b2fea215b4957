-- +goose Up
-- Postgres only (stream followers across replicas); SQLite is one process,
-- whose streams see every commit in memory. Kept so versions match.
SELECT 1;

-- +goose Down
SELECT 1;
