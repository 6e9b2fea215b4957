package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// BenchmarkEdgeCommit compares a kernel edge commit with a bare insert into
// an equivalent table on the same single writer connection.
func BenchmarkEdgeCommit(b *testing.B) {
	storetest.BenchEdgeCommit(b, storetest.BenchTarget{Open: func(b *testing.B) (store.Store, func(context.Context, storetest.BareRow) error) {
		st, err := sqliteOpen(filepath.Join(b.TempDir(), "bench.db"))
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
		return st, func(ctx context.Context, r storetest.BareRow) error {
			_, err := db.ExecContext(ctx, `INSERT INTO bench_bare (session_id, seq, kind, payload, idem_key, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
				r.SessionID, r.Seq, r.Kind, string(r.Payload), r.Key, r.CreatedAt.UnixMicro())
			return err
		}
	}})
}
