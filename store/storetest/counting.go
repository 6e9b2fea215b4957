package storetest

import (
	"context"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// CountingStore is a real store that counts its durable commits: each
// transaction that wrote something, and each top-level write (its own
// transaction). A transaction that only read or locked (a claim that found
// nothing) is not a commit. Benchmarks use it to report commits per
// operation; it changes nothing else.
type CountingStore struct {
	store.Store
	n atomic.Int64
}

// Commits returns the commits counted so far.
func (c *CountingStore) Commits() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *CountingStore) Reset() { c.n.Store(0) }

func (c *CountingStore) count(err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// InTx implements store.Store.
func (c *CountingStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var wrote bool
	err := c.Store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		w := &writeTx{Tx: tx}
		err := fn(ctx, w)
		wrote = w.wrote
		return err
	})
	if wrote {
		c.count(err)
	}
	return err
}

// CreateSession implements store.Writer.
func (c *CountingStore) CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error) {
	out, created, err := c.Store.CreateSession(ctx, s)
	c.count(err)
	return out, created, err
}

// Append implements store.Writer.
func (c *CountingStore) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	r, err := c.Store.Append(ctx, p)
	c.count(err)
	return r, err
}

// AddLedger implements store.Writer.
func (c *CountingStore) AddLedger(ctx context.Context, row gh.LedgerRow) error {
	err := c.Store.AddLedger(ctx, row)
	c.count(err)
	return err
}

// InsertGate implements store.Writer.
func (c *CountingStore) InsertGate(ctx context.Context, g gh.Gate) (bool, error) {
	ok, err := c.Store.InsertGate(ctx, g)
	c.count(err)
	return ok, err
}

// DecideGate implements store.Writer.
func (c *CountingStore) DecideGate(ctx context.Context, d store.GateDecision) (gh.Gate, bool, error) {
	g, won, err := c.Store.DecideGate(ctx, d)
	c.count(err)
	return g, won, err
}

// MarkGateLogged implements store.Writer.
func (c *CountingStore) MarkGateLogged(ctx context.Context, id string) error {
	err := c.Store.MarkGateCommitted(ctx, id)
	c.count(err)
	return err
}

// writeTx notes whether a transaction wrote.
type writeTx struct {
	store.Tx
	wrote bool
}

func (w *writeTx) mark(err error) {
	w.wrote = w.wrote || err == nil
}

func (w *writeTx) CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error) {
	out, created, err := w.Tx.CreateSession(ctx, s)
	w.wrote = w.wrote || created
	return out, created, err
}

func (w *writeTx) Append(ctx context.Context, p store.AppendParams) (store.AppendResult, error) {
	r, err := w.Tx.Append(ctx, p)
	w.wrote = w.wrote || (err == nil && !r.Existing)
	return r, err
}

func (w *writeTx) AddLedger(ctx context.Context, r gh.LedgerRow) error {
	err := w.Tx.AddLedger(ctx, r)
	w.mark(err)
	return err
}

func (w *writeTx) InsertGate(ctx context.Context, g gh.Gate) (bool, error) {
	ok, err := w.Tx.InsertGate(ctx, g)
	w.wrote = w.wrote || ok
	return ok, err
}

func (w *writeTx) DecideGate(ctx context.Context, d store.GateDecision) (gh.Gate, bool, error) {
	g, won, err := w.Tx.DecideGate(ctx, d)
	w.wrote = w.wrote || won || (err == nil && g.State == gh.GateExpired)
	return g, won, err
}

func (w *writeTx) MarkGateCommitted(ctx context.Context, id string) error {
	err := w.Tx.MarkGateCommitted(ctx, id)
	w.mark(err)
	return err
}

func (w *writeTx) UpdateRun(ctx context.Context, r gh.Run) error {
	err := w.Tx.UpdateRun(ctx, r)
	w.mark(err)
	return err
}

func (w *writeTx) InsertRun(ctx context.Context, r gh.Run) (gh.Run, error) {
	out, err := w.Tx.InsertRun(ctx, r)
	w.mark(err)
	return out, err
}

func (w *writeTx) BumpEpoch(ctx context.Context, sessionID string, now time.Time) (gh.Session, error) {
	s, err := w.Tx.BumpEpoch(ctx, sessionID, now)
	w.mark(err)
	return s, err
}

func (w *writeTx) SetReadWatermark(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	err := w.Tx.SetReadWatermark(ctx, sessionID, seq, now)
	w.mark(err)
	return err
}

func (w *writeTx) PutMemoryFact(ctx context.Context, f store.MemoryFact, terms []store.MemoryTerm) (store.MemoryFact, bool, error) {
	out, ok, err := w.Tx.PutMemoryFact(ctx, f, terms)
	w.mark(err)
	return out, ok, err
}

func (w *writeTx) ForgetMemoryFacts(ctx context.Context, userKey string, ids []int64, now time.Time) ([]store.MemoryFact, error) {
	out, err := w.Tx.ForgetMemoryFacts(ctx, userKey, ids, now)
	w.mark(err)
	return out, err
}

func (w *writeTx) SetMemoryVectors(ctx context.Context, vs []store.MemoryVector) error {
	err := w.Tx.SetMemoryVectors(ctx, vs)
	w.mark(err)
	return err
}

func (w *writeTx) InsertMemoryJob(ctx context.Context, j store.MemoryJob) (store.MemoryJob, bool, error) {
	out, ok, err := w.Tx.InsertMemoryJob(ctx, j)
	w.mark(err)
	return out, ok, err
}

func (w *writeTx) UpdateMemoryJob(ctx context.Context, j store.MemoryJob) error {
	err := w.Tx.UpdateMemoryJob(ctx, j)
	w.mark(err)
	return err
}

func (w *writeTx) AppendAll(ctx context.Context, ps []store.AppendParams) ([]store.AppendResult, error) {
	out, err := w.Tx.AppendAll(ctx, ps)
	w.mark(err)
	return out, err
}

func (w *writeTx) UpdateRunAtCommit(ctx context.Context, r gh.Run) error {
	err := w.Tx.UpdateRunAtCommit(ctx, r)
	w.mark(err)
	return err
}

// ClaimStart implements store.Store: a commit when it started a run.
func (c *CountingStore) ClaimStart(ctx context.Context, p store.ClaimStartParams) (store.ClaimStarted, error) {
	out, err := c.Store.ClaimStart(ctx, p)
	if out.Found && !out.Exhausted {
		c.count(err)
	}
	return out, err
}

// CountingRelay is a CountingStore over a store that relays other
// processes' commits to this one's streams (Postgres, store.Relay), so
// that the kernel's streams follow their sessions through it as they do
// through the store itself — and what following costs is counted.
type CountingRelay struct {
	*CountingStore
	store.Relay
}
