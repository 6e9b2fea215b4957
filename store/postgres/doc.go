// Package postgres is the store for many replicas: Postgres through pgx/v5.
// An edge commit is one SQL statement (seq assignment, event insert, run
// upsert and, when a run became claimable, a NOTIFY), so it costs one round
// trip like a bare insert. Claims use FOR UPDATE SKIP LOCKED so replicas
// claim side by side; wake-ups travel by LISTEN/NOTIFY (internal/pgwake).
// A transaction holds one connection and pipelines BEGIN and COMMIT with
// its statements (internal/pgtx).
package postgres
