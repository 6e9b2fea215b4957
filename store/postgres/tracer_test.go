package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// sqlLog records the statements a store sends, plain and pipelined.
type sqlLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *sqlLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql = append(l.sql, strings.ToLower(strings.TrimSpace(sql)))
}

func (l *sqlLog) has(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.sql {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func (l *sqlLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.add(d.SQL)
	return ctx
}
func (l *sqlLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *sqlLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (l *sqlLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.add(d.SQL)
}
func (l *sqlLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Config.Tracer sees every statement of the store's pool: the listener's
// LISTEN, single statements, and a transaction's pipelined BEGIN and
// COMMIT (through pgx.BatchTracer).
func TestTracerSeesTheStoresStatements(t *testing.T) {
	url := testenv.PostgresURL(t)
	log := &sqlLog{}
	st := storetest.OpenPostgres(t, postgres.Config{URL: url, Tracer: log})
	ctx := context.Background()
	err := st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, _, err := tx.CreateSession(ctx, gh.Session{ID: "traced", Created: time.Now(), Updated: time.Now()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the listener's LISTEN", func() bool { return log.has("listen ") })
	for _, want := range []string{"begin", "commit", "insert into sessions"} {
		if !log.has(want) {
			t.Errorf("the tracer did not see %q; saw %q", want, log.sql)
		}
	}
}
