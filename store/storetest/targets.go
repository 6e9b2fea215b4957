package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/sqlite"
)

// The benchmark targets every "ours against the bare database" benchmark
// uses: a fresh store, and a bare single-row INSERT into a table shaped
// like the events table (same columns, primary key and idempotency index)
// on the store's own connections.

// SQLiteTarget opens a fresh SQLite file; the bare insert uses the same
// single writer connection.
var SQLiteTarget = BenchTarget{Open: func(b *testing.B) (store.Store, func(context.Context, BareRow) error) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	db := st.WriteDB()
	if _, err := db.Exec(`CREATE TABLE bench_bare (
		session_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
		idem_key TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID;
		CREATE UNIQUE INDEX bench_bare_idem ON bench_bare (session_id, idem_key) WHERE idem_key IS NOT NULL`); err != nil {
		b.Fatal(err)
	}
	return st, func(ctx context.Context, r BareRow) error {
		_, err := db.ExecContext(ctx, `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			r.SessionID, r.Seq, r.Kind, string(r.Payload), r.Key, r.CreatedAt.UnixMicro())
		return err
	}
}}

// PostgresTarget opens a fresh schema (GATEHOUSE_TEST_POSTGRES_URL); the
// bare insert uses the store's pool.
var PostgresTarget = BenchTarget{Open: func(b *testing.B) (store.Store, func(context.Context, BareRow) error) {
	url := testenv.PostgresURL(b)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Channel: "wake_" + testenv.SchemaOf(url)})
	if err != nil {
		b.Fatal(err)
	}
	pool := st.Pool()
	if _, err := pool.Exec(context.Background(), `CREATE TABLE bench_bare (
		session_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, payload JSONB NOT NULL,
		idem_key TEXT, created_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (session_id, seq));
		CREATE UNIQUE INDEX bench_bare_idem ON bench_bare (session_id, idem_key) WHERE idem_key IS NOT NULL`); err != nil {
		b.Fatal(err)
	}
	return st, func(ctx context.Context, r BareRow) error {
		_, err := pool.Exec(ctx, `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES ($1, $2, $3, $4::jsonb, $5, $6)`,
			r.SessionID, r.Seq, r.Kind, string(r.Payload), r.Key, r.CreatedAt)
		return err
	}
}}
