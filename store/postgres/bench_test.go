package postgres_test

import (
	"context"
	"testing"

	"github.com/gatehouse/gatehouse/internal/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// BenchmarkEdgeCommit compares a kernel edge commit with a bare insert into
// an equivalent table over the same connection pool.
func BenchmarkEdgeCommit(b *testing.B) {
	storetest.BenchEdgeCommit(b, storetest.BenchTarget{Open: func(b *testing.B) (store.Store, func(context.Context, storetest.BareRow) error) {
		url := testenv.PostgresURL(b)
		st, err := openStore(url)
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
		return st, func(ctx context.Context, r storetest.BareRow) error {
			_, err := pool.Exec(ctx, `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES ($1, $2, $3, $4::jsonb, $5, $6)`,
				r.SessionID, r.Seq, r.Kind, string(r.Payload), r.Key, r.CreatedAt)
			return err
		}
	}})
}
