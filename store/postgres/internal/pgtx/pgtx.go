package pgtx

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Tx is a transaction on one pooled connection that saves round trips:
// BEGIN travels in one pipeline with the transaction's first statement,
// and statements deferred to the commit (see AtCommit) travel with COMMIT.
// A transaction that never ran a statement sends nothing.
type Tx struct {
	conn     *pgxpool.Conn
	begun    bool
	deferred *pgx.Batch
}

// New starts (lazily: nothing is sent yet) a transaction on conn, which
// the caller releases after Commit or Rollback.
func New(conn *pgxpool.Conn) *Tx { return &Tx{conn: conn} }

const rollbackTimeout = 5 * time.Second

var errCommitRolledBack = errors.New("commit rolled back: the transaction had failed")

// Batch sends b, preceded by BEGIN when the transaction has not begun.
// The caller reads b's results from the returned BatchResults and closes it.
func (c *Tx) Batch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if c.begun {
		return c.conn.SendBatch(ctx, b), nil
	}
	withBegin := &pgx.Batch{}
	withBegin.Queue("begin")
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	br := c.conn.SendBatch(ctx, withBegin)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	c.begun = true
	return br, nil
}

// Exec runs one statement, with BEGIN in its pipeline when it is the first.
func (c *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if c.begun {
		return c.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := c.Batch(ctx, b)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query runs a query; the first statement sends BEGIN on its own first.
func (c *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !c.begun {
		if _, err := c.conn.Exec(ctx, "begin"); err != nil {
			return nil, err
		}
		c.begun = true
	}
	return c.conn.Query(ctx, sql, args...)
}

// QueryRow runs a one-row query, with BEGIN in its pipeline when it is the
// first.
func (c *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if c.begun {
		return c.conn.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br, err := c.Batch(ctx, b)
	if err != nil {
		return errRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

// AtCommit defers a statement whose result nobody waits for to the
// commit's pipeline. Its failure fails the commit.
func (c *Tx) AtCommit(sql string, args ...any) {
	if c.deferred == nil {
		c.deferred = &pgx.Batch{}
	}
	c.deferred.Queue(sql, args...)
}

// Commit sends the deferred statements and COMMIT in one pipeline.
func (c *Tx) Commit(ctx context.Context) error {
	b := c.deferred
	if b == nil {
		if !c.begun {
			return nil
		}
		b = &pgx.Batch{}
	}
	n := b.Len()
	b.Queue("commit")
	br, err := c.Batch(ctx, b)
	if err != nil {
		return err
	}
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() == "ROLLBACK" {
		err = errCommitRolledBack
	}
	return err
}

// Rollback ends a transaction that failed. A connection it cannot be
// sure of is closed, so the pool does not hand out a connection that is
// still inside a transaction.
func (c *Tx) Rollback() {
	if !c.begun {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
	defer cancel()
	if _, err := c.conn.Exec(ctx, "rollback"); err != nil {
		_ = c.conn.Conn().Close(ctx)
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow closes its pipeline once the row is read.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}
