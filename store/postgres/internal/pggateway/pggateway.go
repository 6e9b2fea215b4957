package pggateway

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	gh "github.com/gatehouse/gatehouse"
)

// Querier is what the store runs statements on: the pool, where each
// statement is its own transaction, or a transaction's connection.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Batcher sends statements in one pipeline: a transaction's connection.
type Batcher interface {
	Batch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error)
}

// AtCommitter defers a statement to the COMMIT's pipeline: a
// transaction's connection.
type AtCommitter interface {
	AtCommit(sql string, args ...any)
}

// dbErr classifies a database error as the store does. Retryable
// conflicts keep their *pgconn.PgError reachable so the store's InTx can
// see them.
func dbErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ge *gh.Error
	if errors.As(err, &ge) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "receive_log_update" {
		return gh.Wrap(gh.CodeConflict, err, "postgres: %s: the update was received before", what)
	}
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		return gh.Wrap(gh.CodeInvalid, err, "postgres: %s", what)
	}
	return gh.Wrap(gh.CodeUnavailable, err, "postgres: %s", what)
}

// collect runs a query and scans every row with scan; what names the read
// in errors. An empty list is nil, as the SQLite store returns it.
func collect[T any](ctx context.Context, q Querier, what string, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, dbErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if len(out) == 0 {
		out = nil
	}
	return out, dbErr(err, what)
}

// nullTime is NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// where builds a conjunction of equality conditions on the non-empty values,
// numbering parameters from 1.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, v any) {
	w.args = append(w.args, v)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

func (w *where) eq(col, v string) {
	if v != "" {
		w.add(col+" = ?", v)
	}
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

func (w *where) limit() string { return " LIMIT $" + strconv.Itoa(len(w.args)+1) }
