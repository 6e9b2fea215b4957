package sqlrow

import (
	"context"
	"database/sql"
	"errors"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Querier is what the store runs statements on: a *sql.DB, *sql.Conn or
// *sql.Tx (or the store's prepared-statement wrappers of them).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is a *sql.Row or *sql.Rows.
type Scanner = interface{ Scan(...any) error }

// DBErr classifies a database error as unavailable, naming what failed;
// a typed error passes as it is.
func DBErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var ge *gh.Error
	if errors.As(err, &ge) {
		return err
	}
	return gh.Wrap(gh.CodeUnavailable, err, "sqlite: %s", what)
}

// Micros is t as Unix microseconds, 0 for the zero time.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromMicros is Micros undone, in UTC.
func FromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// QueryAll runs a query and scans every row with scan; what names the
// read in errors.
func QueryAll[T any](ctx context.Context, q Querier, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, DBErr(err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, DBErr(err, what)
		}
		out = append(out, v)
	}
	return out, DBErr(rows.Err(), what)
}
