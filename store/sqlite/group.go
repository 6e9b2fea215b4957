package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// maxGroup bounds how many transactions share one commit, so a caller
// waits for at most this many others' statements before its own commit.
const maxGroup = 32

// group commits concurrent transactions together. SQLite has one writer
// and every commit is a sync to disk, so writers queue behind each
// other's syncs; instead, a transaction that finds others waiting for the
// writer leaves its work in the open transaction and lets the next one
// go on, and the last of the group commits for all (as the receive
// batcher does for ingest, and as Postgres does with concurrent commits
// in its WAL). Each transaction after the first runs under a savepoint,
// so its failure rolls back only its own statements; every caller learns
// the commit's outcome before InTx returns, so nothing is acknowledged
// that is not on disk.
type group struct {
	mu      sync.Mutex   // the writer: held while a transaction runs
	waiting atomic.Int32 // callers queued for mu
	tx      *sql.Tx      // the group's open transaction; nil between groups
	members []chan error // transactions in tx, waiting for its commit
	wake    bool         // a member asked for a wake-up after the commit
}

// InTx implements store.Store: fn runs in a transaction on the single
// writer connection; concurrent ones may share a commit (see group).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	g := &s.group
	g.waiting.Add(1)
	g.mu.Lock()
	g.waiting.Add(-1)
	first := g.tx == nil
	if first {
		// The group outlives the first caller's context: its
		// cancellation must not roll back the others' work.
		sqlTx, err := s.w.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			g.mu.Unlock()
			return gh.Wrap(gh.CodeUnavailable, err, "sqlite: begin")
		}
		g.tx = sqlTx
	} else if _, err := g.tx.ExecContext(context.WithoutCancel(ctx), "SAVEPOINT member"); err != nil {
		return g.fail(gh.Wrap(gh.CodeUnavailable, err, "sqlite: savepoint"))
	}
	t := &tx{writer: writer{reader{q: inTx{tx: g.tx, c: s.wc}}}}
	err := fn(ctx, t)
	// Statements deferred to the commit, as Postgres sends them with it:
	// what they write is not seen inside the transaction on either.
	for _, d := range t.atCommit {
		if err != nil {
			break
		}
		err = d(ctx)
	}
	if err != nil {
		if first {
			// Nothing else is in the transaction: roll it all back.
			return g.fail(err)
		}
		if _, rerr := g.tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO member; RELEASE member"); rerr != nil {
			// SQLite rolled the whole transaction back (a full disk, an
			// I/O error): the group's work is gone with it.
			return g.fail(gh.Wrap(gh.CodeUnavailable, rerr, "sqlite: roll back to savepoint after %v", err))
		}
		// The members before this one still wait for their commit.
		g.next(s)
		return err
	}
	if !first {
		if _, err := g.tx.ExecContext(context.WithoutCancel(ctx), "RELEASE member"); err != nil {
			return g.fail(gh.Wrap(gh.CodeUnavailable, err, "sqlite: release savepoint"))
		}
	}
	done := make(chan error, 1)
	g.members = append(g.members, done)
	g.wake = g.wake || t.wake
	g.next(s)
	return <-done
}

// next hands the writer on: when another transaction is queued for it
// and the group has room, that one (or one after it) commits for the
// group; otherwise the group commits now. mu is held and is released.
func (g *group) next(s *Store) {
	if g.waiting.Load() > 0 && len(g.members) < maxGroup {
		g.mu.Unlock()
		return
	}
	g.commit(s)
}

// commit commits the group's transaction and tells every member; mu is
// held and is released.
func (g *group) commit(s *Store) {
	if len(g.members) == 0 {
		// Every member failed and rolled back its own part.
		_ = g.tx.Rollback()
		g.tx, g.wake = nil, false
		g.mu.Unlock()
		return
	}
	err := g.tx.Commit()
	if err != nil {
		err = gh.Wrap(gh.CodeUnavailable, err, "sqlite: commit")
	}
	members, wake := g.members, g.wake
	g.tx, g.members, g.wake = nil, nil, false
	// The connection is free until the next transaction begins.
	s.wc.prepareLater(context.Background())
	g.mu.Unlock()
	for _, m := range members {
		m <- err
	}
	if err == nil && wake {
		s.wake.Signal()
	}
}

// fail ends the group's transaction after an error that undid it: every
// member's work is lost, and each is told so. mu is held and released.
func (g *group) fail(err error) error {
	_ = g.tx.Rollback()
	members := g.members
	g.tx, g.members, g.wake = nil, nil, false
	g.mu.Unlock()
	for _, m := range members {
		m <- err
	}
	return err
}
