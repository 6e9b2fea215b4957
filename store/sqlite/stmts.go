package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxStmts bounds the statements kept prepared per pool: the store's
// statements are a fixed set; one built per call (an IN list of some
// length) stops being cached once the bound is reached.
const maxStmts = 512

// stmtCache keeps a pool's statements prepared. The driver parses a
// statement anew at every call otherwise, which was a fifth of a simple
// turn's CPU. database/sql prepares a cached statement again on each
// connection it runs on, and keeps it there.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// later are statements first met inside a transaction: the writer's
	// only connection is busy then, so they are prepared after the
	// commit (prepareLater).
	later map[string]struct{}
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, later: map[string]struct{}{}}
}

func (c *stmtCache) cached(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// prepare returns the statement, prepared on the pool, or nil when it
// cannot be (the cache is full, or preparing failed: the caller runs the
// query unprepared and meets the error there).
func (c *stmtCache) prepare(ctx context.Context, query string) *sql.Stmt {
	if s := c.cached(query); s != nil {
		return s
	}
	c.mu.Lock()
	full := len(c.m) >= maxStmts
	c.mu.Unlock()
	if full {
		return nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[query]; old != nil {
		s.Close()
		return old
	}
	c.m[query] = s
	return s
}

// defer records a statement met inside a transaction, for prepareLater.
func (c *stmtCache) deferPrepare(query string) {
	c.mu.Lock()
	if len(c.m)+len(c.later) < maxStmts {
		c.later[query] = struct{}{}
	}
	c.mu.Unlock()
}

// prepareLater prepares the statements met inside transactions, once the
// writer connection is free (after a commit, before the next begins).
func (c *stmtCache) prepareLater(ctx context.Context) {
	c.mu.Lock()
	if len(c.later) == 0 {
		c.mu.Unlock()
		return
	}
	later := c.later
	c.later = map[string]struct{}{}
	c.mu.Unlock()
	for q := range later {
		c.prepare(ctx, q)
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	c.m = map[string]*sql.Stmt{}
}

// pooled is a querier on a pool, through its statement cache.
type pooled struct{ c *stmtCache }

func (p pooled) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := p.c.prepare(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return p.c.db.ExecContext(ctx, query, args...)
}

func (p pooled) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := p.c.prepare(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.c.db.QueryContext(ctx, query, args...)
}

func (p pooled) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := p.c.prepare(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return p.c.db.QueryRowContext(ctx, query, args...)
}

// inTx is a querier on a transaction of the writer: a statement prepared
// on the writer's connection runs there as prepared (database/sql reuses
// it for a transaction on the same connection); one not yet prepared runs
// as it is and is prepared after the commit.
type inTx struct {
	tx *sql.Tx
	c  *stmtCache
}

func (t inTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if s := t.c.cached(query); s != nil {
		return t.tx.StmtContext(ctx, s)
	}
	t.c.deferPrepare(query)
	return nil
}

func (t inTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t inTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t inTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
